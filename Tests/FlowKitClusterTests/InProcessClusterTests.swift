import FlowKit
@_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Foundation
import Logging
import Synchronization
import Testing

/// A coordinator and nodes in one process, on real loopback sockets: the plumbing, quickly. The
/// multi-process tests run the same code as separate processes.
@Suite struct InProcessClusterTests {
    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        registry.register(KeyValueFlow.self, as: "kv")
        registry.register(TimerFlow.self, as: "timer")
        return registry
    }

    struct Cluster {
        var coordinator: Coordinator
        var nodes: [Node]
        var endpoints: CoordinatorEndpoints
        var clients: [ClusterClient]
        var tasks: [Task<Void, any Error>]

        func stop() async {
            for client in clients { await client.close() }
            for node in nodes { node.shutdown() }
            coordinator.shutdown()
            for task in tasks { _ = try? await task.value }
        }
    }

    static func startCluster(nodes count: Int) async throws -> Cluster {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        var configuration = CoordinatorConfiguration()
        configuration.submitEndpoint = "tcp://127.0.0.1:*"
        configuration.publishEndpoint = "tcp://127.0.0.1:*"
        configuration.syncEndpoint = "tcp://127.0.0.1:*"
        let coordinator = Coordinator(configuration: configuration, registry: registry, logger: logger)
        let ready = AsyncStream.makeStream(of: CoordinatorEndpoints.self)
        var tasks: [Task<Void, any Error>] = [Task { try await coordinator.run { ready.continuation.yield($0) } }]
        var iterator = ready.stream.makeAsyncIterator()
        let endpoints = await iterator.next()!
        var nodes: [Node] = []
        var clients: [ClusterClient] = []
        for id in 1...count {
            let node = Node(configuration: NodeConfiguration(id: UInt32(id), coordinator: endpoints), registry: registry, logger: logger)
            let nodeReady = AsyncStream.makeStream(of: String.self)
            tasks.append(Task { try await node.run { nodeReady.continuation.yield($0) } })
            var nodeIterator = nodeReady.stream.makeAsyncIterator()
            let endpoint = await nodeIterator.next()!
            nodes.append(node)
            clients.append(try await ClusterClient(endpoint: endpoint, logger: logger))
        }
        return Cluster(coordinator: coordinator, nodes: nodes, endpoints: endpoints, clients: clients, tasks: tasks)
    }

    @Test func emitsAtTwoNodesConvergeOnBoth() async throws {
        let cluster = try await Self.startCluster(nodes: 2)
        var lastSeq: UInt64 = 0
        for round in 0..<20 {
            let client = cluster.clients[round % 2]
            let ordered = try await client.emit(json: #"{"increment":{}}"#, to: "counter/a", wait: .applied)
            #expect(ordered.applied)
            lastSeq = max(lastSeq, ordered.seq)
        }
        let states = try await [
            cluster.clients[0].query("counter/a", minApplied: lastSeq),
            cluster.clients[1].query("counter/a", minApplied: lastSeq),
        ]
        #expect(String(decoding: states[0].json, as: UTF8.self) == #"{"count":20}"#)
        #expect(states[0].digest == states[1].digest)
        #expect(lastSeq == 20)
        await cluster.stop()
    }

    @Test func badEmitsAreRefusedAndNeverOrdered() async throws {
        let cluster = try await Self.startCluster(nodes: 1)
        let client = cluster.clients[0]
        await #expect(throws: ProtocolError.self) {
            try await client.emit(json: #"{"increment":{}}"#, to: "nosuchflow/a")
        }
        await #expect(throws: ProtocolError.self) {
            try await client.emit(json: #"{"explode":{}}"#, to: "counter/a")
        }
        let ordered = try await client.emit(json: #"{"increment":{}}"#, to: "counter/a", wait: .applied)
        #expect(ordered.seq == 1)
        let status = try await client.status()
        #expect(status.rejected["unknown_flow"] == 1)
        #expect(status.rejected["undecodable_event"] == 1)
        await cluster.stop()
    }
}
