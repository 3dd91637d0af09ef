import FlowKit
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A coordinator and a node in a user's own ServiceGroup, as README shows: they serve, and the
/// group's graceful shutdown stops both, with nothing left running.
@Suite struct ClusterServicesTests {
    /// A port no socket holds now, from the OS (bound and released at once).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aCoordinatorAndANodeRunInAUsersServiceGroupAndStopWithIt() async throws {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let endpoints = CoordinatorEndpoints(
            submit: "tcp://127.0.0.1:\(try Self.freePort())", publish: "tcp://127.0.0.1:\(try Self.freePort())",
            sync: "tcp://127.0.0.1:\(try Self.freePort())"
        )
        var coordinatorConfiguration = CoordinatorConfiguration()
        coordinatorConfiguration.submitEndpoint = endpoints.submit
        coordinatorConfiguration.publishEndpoint = endpoints.publish
        coordinatorConfiguration.syncEndpoint = endpoints.sync
        var nodeConfiguration = NodeConfiguration(id: 1, coordinator: endpoints)
        nodeConfiguration.clientEndpoint = "tcp://127.0.0.1:\(try Self.freePort())"
        let coordinator = Coordinator(configuration: coordinatorConfiguration, registry: registry, logger: logger)
        let node = Node(configuration: nodeConfiguration, registry: registry, logger: logger)

        let group = ServiceGroup(services: [coordinator, node], logger: logger)
        let running = Task { try await group.run() }
        let client = try await ClusterClient(endpoint: nodeConfiguration.clientEndpoint, logger: logger)
        // The node joins in the background: ask until it answers. The unit tests run side by side
        // and the synchronous ones (fsync, hashing in a debug build) can hold both of the pool's
        // threads for tens of seconds (seen: 57 s for what takes 0.2 s alone), so the bound is
        // generous, as in `eventually`.
        let deadline = ContinuousClock.now + .seconds(180)
        var ordered: ClusterClient.Ordered?
        while ordered == nil, ContinuousClock.now < deadline {
            ordered = try? await client.emit(json: #"{"increment":{}}"#, to: "counter/a", wait: .applied)
        }
        // An attempt that timed out while the node was still joining may have been ordered too
        // (the node keeps retrying it), so the one answered is at seq 1 or later.
        #expect((ordered?.seq ?? 0) >= 1 && ordered?.applied == true, "the node served an emit within 180 s")
        await client.close()

        await group.triggerGracefulShutdown()
        let finished = Mutex(false)
        Task {
            _ = try? await running.value
            finished.withLock { $0 = true }
        }
        let until = ContinuousClock.now + .seconds(180)
        while !finished.withLock({ $0 }), ContinuousClock.now < until { try await Task.sleep(for: .milliseconds(20)) }
        let stopped = finished.withLock { $0 }
        #expect(stopped, "the group's graceful shutdown stopped the coordinator and the node within 180 s")
        if !stopped {
            node.shutdown()
            coordinator.shutdown()
        }
    }
}
