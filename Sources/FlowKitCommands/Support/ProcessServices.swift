import CFlowKitSupport
import Logging
import ServiceLifecycle
import UnixSignals

/// The malloc this process runs on, for READY lines and status: "jemalloc 5.3.0-…" for the flowkit
/// binaries on Linux (Package.swift links it into CFlowKitSupport), "system" elsewhere.
package let processAllocator = String(cString: flowkit_allocator())

/// Runs a long-lived part of the process under a `ServiceGroup`, so SIGTERM and SIGINT shut it down
/// gracefully: `stop` asks it to finish, and `body` returns once it has.
package struct ShutdownService: Service {
    package let body: @Sendable () async throws -> Void
    package let stop: @Sendable () -> Void

    package func run() async throws {
        try await withGracefulShutdownHandler {
            try await body()
        } onGracefulShutdown: {
            stop()
        }
    }

    /// Runs `body` until it returns or the process gets SIGTERM or SIGINT.
    package static func run(
        logger: Logger,
        body: @escaping @Sendable () async throws -> Void,
        stop: @escaping @Sendable () -> Void
    ) async throws {
        var configuration = ServiceGroupConfiguration(
            services: [
                .init(
                    service: ShutdownService(body: body, stop: stop),
                    successTerminationBehavior: .gracefullyShutdownGroup
                )
            ],
            logger: logger
        )
        configuration.gracefulShutdownSignals = [.sigterm, .sigint]
        let group = ServiceGroup(configuration: configuration)
        try await group.run()
    }
}
