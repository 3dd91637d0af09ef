import FlowKitCommands
import FlowKitProcesses
import Foundation

/// What `flowkit chaos` needs of the cluster it torments: where the processes listen, their pids,
/// and the faults. Two kinds: processes on loopback (``LoopbackChaosCluster``, through
/// ``LocalCluster``) and processes in network namespaces of their own (``NamespaceChaosCluster``),
/// where partitions and packet loss are possible.
protocol ChaosCluster: Sendable {
    var nodeIDs: [UInt32] { get }
    /// The current endpoints (metrics ports change when a process restarts).
    func endpoints() async -> ChaosEndpoints
    /// The pid of every process that should be running, by name (`coordinator`, `node-2`).
    func processes() async -> [String: Int32]
    /// Processes that exited although the tool did not stop them, with how they ended.
    func unexpectedExits() async -> [String]

    func killNode(_ id: UInt32) async
    func startNode(_ id: UInt32) async throws
    func killCoordinator() async
    func startCoordinator() async throws
    /// Sends `signal` to node `id`'s process (SIGSTOP, SIGCONT, SIGUSR1).
    func signalNode(_ id: UInt32, _ signal: Int32) async

    /// Cuts node `id` off the network, or reconnects it.
    func setPartitioned(_ id: UInt32, _ partitioned: Bool) async throws
    /// Makes node `id`'s link slow and lossy, or restores it.
    ///
    /// - Returns: What was applied.
    @discardableResult
    func setDegraded(_ id: UInt32, _ degraded: Bool) async throws -> String

    func stop() async
}

/// Where a chaos cluster's processes listen.
struct ChaosEndpoints: Sendable {
    var nodes: [UInt32: String]
    var publish: String
    var sync: String
    var coordinatorMetrics: String?
    var nodeMetrics: [UInt32: String]
}

/// A coordinator and nodes on loopback, started by ``LocalCluster`` as children of this process.
struct LoopbackChaosCluster: ChaosCluster {
    let cluster: LocalCluster
    let nodeIDs: [UInt32]

    /// Starts `nodes` nodes and a coordinator with a durable log in `directory`.
    static func start(directory: String, nodes: Int, durability: String, nodeArguments: [String]) async throws -> LoopbackChaosCluster {
        let cluster = LocalCluster(directory: directory, basePort: 0, childLogLevel: "notice", durability: durability)
        await cluster.setExtraArguments(coordinator: [], node: nodeArguments)
        do {
            _ = try await cluster.start(nodes: nodes)
        } catch {
            await cluster.stop()
            throw error
        }
        return LoopbackChaosCluster(cluster: cluster, nodeIDs: Array(1...UInt32(nodes)))
    }

    func endpoints() async -> ChaosEndpoints {
        let file = await cluster.file!
        return ChaosEndpoints(
            nodes: Dictionary(uniqueKeysWithValues: file.nodes.map { ($0.id, $0.clientEndpoint) }),
            publish: file.coordinator.publish,
            sync: file.coordinator.sync,
            coordinatorMetrics: file.coordinator.metrics,
            nodeMetrics: Dictionary(uniqueKeysWithValues: file.nodes.compactMap { node in node.metrics.map { (node.id, $0) } })
        )
    }

    func processes() async -> [String: Int32] {
        var result: [String: Int32] = [:]
        if let coordinator = await cluster.coordinator, coordinator.isRunning { result["coordinator"] = coordinator.pid }
        for (id, node) in await cluster.nodes where node.isRunning { result["node-\(id)"] = node.pid }
        return result
    }

    func unexpectedExits() async -> [String] {
        let children = Array(await cluster.nodes.values) + [await cluster.coordinator].compactMap { $0 }
        return children.filter { !$0.isRunning }.map(\.exitDescription)
    }

    func killNode(_ id: UInt32) async { await cluster.killNode(id) }
    func startNode(_ id: UInt32) async throws { try await cluster.startNode(id: id) }
    func killCoordinator() async { await cluster.killCoordinator() }
    func startCoordinator() async throws { try await cluster.startCoordinator() }

    func signalNode(_ id: UInt32, _ signal: Int32) async {
        await cluster.nodes[id]?.signal(signal)
    }

    func setPartitioned(_ id: UInt32, _ partitioned: Bool) async throws {
        throw ChaosError("partitions need --partitions (network namespaces)")
    }

    func setDegraded(_ id: UInt32, _ degraded: Bool) async throws -> String {
        throw ChaosError("packet loss and delay need --partitions (network namespaces)")
    }

    func stop() async {
        // A paused node would ignore SIGTERM until the grace period ends.
        for id in nodeIDs { await signalNode(id, SIGCONT) }
        await cluster.stop()
    }
}
