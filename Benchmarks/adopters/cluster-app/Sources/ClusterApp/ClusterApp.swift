import FlowKit
import FlowKitCluster
import Foundation
import Logging

/// A room's score, replicated: every node applies the same events in the same order.
struct ScoreFlow: ReplicatedFlow {
    struct State: Codable, Hashable, Sendable { var points = 0 }
    enum Event: Codable, Equatable, Sendable { case scored(Int) }

    static var initialState: State { State() }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .scored(let points): state.points += points
        }
        return .none
    }
}

/// A coordinator with its log in a directory of its own and one node, both in this process on
/// loopback ports the system chooses; a client emits two events and reads the state back.
@main
enum ClusterApp {
    static func main() async throws {
        var registry = FlowRegistry()
        registry.register(ScoreFlow.self)  // addresses score/<instance>
        var logger = Logger(label: "cluster-app")
        logger.logLevel = .warning

        let data = FileManager.default.temporaryDirectory.appendingPathComponent("cluster-app-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        var configuration = CoordinatorConfiguration()
        configuration.dataDirectory = data
        configuration.submitEndpoint = "tcp://127.0.0.1:*"
        configuration.publishEndpoint = "tcp://127.0.0.1:*"
        configuration.syncEndpoint = "tcp://127.0.0.1:*"

        let (coordinatorReady, coordinatorEndpoints) = AsyncStream.makeStream(of: CoordinatorEndpoints.self)
        let (nodeReady, nodeEndpoint) = AsyncStream.makeStream(of: String.self)
        try await withThrowingTaskGroup(of: Void.self) { [configuration, registry, logger] group in
            group.addTask {
                try await Coordinator(configuration: configuration, registry: registry, logger: logger).run { coordinatorEndpoints.yield($0) }
            }
            var coordinators = coordinatorReady.makeAsyncIterator()
            guard let endpoints = await coordinators.next() else { return }
            group.addTask {
                try await Node(configuration: NodeConfiguration(id: 1, coordinator: endpoints), registry: registry, logger: logger).run { nodeEndpoint.yield($0) }
            }
            var nodes = nodeReady.makeAsyncIterator()
            guard let clientEndpoint = await nodes.next() else { return }

            let client = try await ClusterClient(endpoint: clientEndpoint, logger: logger)
            let room = try await client.flow(ScoreFlow.self, "room-1")
            try await room.emit(.scored(3), wait: .applied)
            try await room.emit(.scored(4), wait: .applied)
            print("cluster-app: score/room-1 has \(await room.state.points) points")
            group.cancelAll()
        }
    }
}
