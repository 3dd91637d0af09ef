import FlowKitProcesses
import Foundation
import Synchronization

/// A coordinator and nodes, each in a network namespace of its own (``NetworkLab``), so that a
/// node can be partitioned from the rest or given a lossy, slow link.
final class NamespaceChaosCluster: ChaosCluster {
    let lab: NetworkLab
    let directory: String
    let durability: String
    let nodeArguments: [String]
    let nodeIDs: [UInt32]
    private let children = Mutex<(coordinator: ChildProcess?, nodes: [UInt32: ChildProcess])>((nil, [:]))

    private static let ports = (submit: 7400, publish: 7401, sync: 7402, metrics: 9400, client: 7410, nodeMetrics: 9410)

    private init(lab: NetworkLab, directory: String, durability: String, nodeArguments: [String]) {
        self.lab = lab
        self.directory = directory
        self.durability = durability
        self.nodeArguments = nodeArguments
        nodeIDs = lab.nodeIDs
    }

    static func start(directory: String, nodes: Int, durability: String, nodeArguments: [String]) async throws -> NamespaceChaosCluster {
        if let reason = NetworkLab.check() { throw ChaosError("--partitions is not possible here: \(reason)") }
        NetworkLab.removeStale()
        let lab = NetworkLab(nodeIDs: Array(1...UInt32(nodes)))
        let cluster = NamespaceChaosCluster(lab: lab, directory: directory, durability: durability, nodeArguments: nodeArguments)
        do {
            try lab.setUp()
            try await cluster.startCoordinator()
            for id in cluster.nodeIDs { try await cluster.startNode(id) }
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    private var coordinatorHost: String { "tcp://\(lab.coordinatorAddress)" }

    func endpoints() async -> ChaosEndpoints {
        ChaosEndpoints(
            nodes: Dictionary(uniqueKeysWithValues: nodeIDs.map { ($0, "tcp://\(lab.address(node: $0)):\(Self.ports.client)") }),
            publish: "\(coordinatorHost):\(Self.ports.publish)",
            sync: "\(coordinatorHost):\(Self.ports.sync)",
            coordinatorMetrics: "\(lab.coordinatorAddress):\(Self.ports.metrics)",
            nodeMetrics: Dictionary(uniqueKeysWithValues: nodeIDs.map { ($0, "\(lab.address(node: $0)):\(Self.ports.nodeMetrics)") })
        )
    }

    func processes() async -> [String: Int32] {
        children.withLock { children in
            var result: [String: Int32] = [:]
            if let coordinator = children.coordinator, coordinator.isRunning { result["coordinator"] = coordinator.pid }
            for (id, node) in children.nodes where node.isRunning { result["node-\(id)"] = node.pid }
            return result
        }
    }

    func unexpectedExits() async -> [String] {
        children.withLock { children in
            ([children.coordinator].compactMap { $0 } + children.nodes.values).filter { !$0.isRunning }.map(\.exitDescription)
        }
    }

    func startCoordinator() async throws {
        let arguments = [
            "coordinator",
            "--submit", "\(coordinatorHost):\(Self.ports.submit)",
            "--publish", "\(coordinatorHost):\(Self.ports.publish)",
            "--sync", "\(coordinatorHost):\(Self.ports.sync)",
            "--data-dir", directory + "/coordinator",
            "--durability", durability,
            "--log-level", "notice",
            "--metrics", "\(lab.coordinatorAddress):\(Self.ports.metrics)",
        ]
        let child = try spawn("coordinator", arguments, namespace: lab.coordinatorNamespace)
        children.withLock { $0.coordinator = child }
        _ = try await child.waitUntilReady()
    }

    func startNode(_ id: UInt32) async throws {
        let host = lab.address(node: id)
        let arguments = [
            "node", "--id", "\(id)",
            "--coordinator", "\(coordinatorHost):\(Self.ports.submit)",
            "--coordinator-publish", "\(coordinatorHost):\(Self.ports.publish)",
            "--coordinator-sync", "\(coordinatorHost):\(Self.ports.sync)",
            "--client", "tcp://\(host):\(Self.ports.client)",
            "--data-dir", directory + "/node-\(id)",
            "--log-level", "notice",
            "--metrics", "\(host):\(Self.ports.nodeMetrics)",
        ] + nodeArguments
        let child = try spawn("node-\(id)", arguments, namespace: lab.namespace(node: id))
        children.withLock { $0.nodes[id] = child }
        _ = try await child.waitUntilReady()
    }

    /// Starts this `flowkit` in `namespace`, its stderr appended to `name.log`.
    private func spawn(_ name: String, _ arguments: [String], namespace: String) throws -> ChildProcess {
        try ChildProcess.spawn(
            arguments: arguments,
            name: name,
            directory: directory,
            stderrPath: "\(directory)/\(name).log",
            appendingStderr: true,
            namespace: namespace,
            whenParentDies: .stopsGracefully
        )
    }

    func killNode(_ id: UInt32) async { await children.withLock { $0.nodes[id] }?.kill9() }
    func killCoordinator() async { await children.withLock { $0.coordinator }?.kill9() }

    func signalNode(_ id: UInt32, _ signal: Int32) async {
        children.withLock { $0.nodes[id] }?.signal(signal)
    }

    func setPartitioned(_ id: UInt32, _ partitioned: Bool) async throws { try lab.setPartitioned(id, partitioned) }
    func setDegraded(_ id: UInt32, _ degraded: Bool) async throws -> String { try lab.setDegraded(id, degraded) }

    func stop() async {
        let (coordinator, nodes) = children.withLock { ($0.coordinator, Array($0.nodes.values)) }
        for id in nodeIDs {
            try? lab.setPartitioned(id, false)
            _ = try? lab.setDegraded(id, false)
        }
        for node in nodes { await node.stop() }
        await coordinator?.stop()
        lab.tearDown()
    }
}
