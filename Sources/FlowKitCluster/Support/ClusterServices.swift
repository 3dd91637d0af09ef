import ServiceLifecycle

/// A node runs in a user's own `ServiceGroup` beside the rest of their program, and stops on the
/// group's graceful shutdown (SIGTERM, SIGINT, or another service ending):
///
/// ```swift
/// let node = Node(configuration: NodeConfiguration(id: 1, coordinator: endpoints), registry: registry, logger: logger)
/// let group = ServiceGroup(services: [node], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()
/// ```
extension Node: Service {
    /// Connects, joins and serves until the group shuts down gracefully (then ``shutdown()``).
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await run(onReady: { _ in })
        } onGracefulShutdown: {
            self.shutdown()
        }
    }
}

/// A coordinator runs in a user's own `ServiceGroup`, as a ``Node`` does.
extension Coordinator: Service {
    /// Binds, recovers the log and serves until the group shuts down gracefully (then
    /// ``shutdown()``).
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await run(onReady: { _ in })
        } onGracefulShutdown: {
            self.shutdown()
        }
    }
}
