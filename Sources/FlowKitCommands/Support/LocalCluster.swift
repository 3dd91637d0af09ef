import FlowKitCluster
import FlowKitProcesses
import Foundation
import ZeroMQ

/// Starts, watches and stops a coordinator and nodes as child processes on loopback: what
/// `flowkit cluster`, `bench` and `chaos` run.
package actor LocalCluster {
    package let directory: String
    package let basePort: Int
    package let childLogLevel: String
    package let durability: String
    /// With CURVE: the keys generated for this cluster.
    package private(set) var curve: LocalClusterFile.CurveFiles?
    package var extraCoordinatorArguments: [String] = []
    package var extraNodeArguments: [String] = []
    package private(set) var coordinator: ChildProcess?
    package private(set) var nodes: [UInt32: ChildProcess] = [:]
    package private(set) var file: LocalClusterFile?
    private var coordinatorMetrics: String?

    package init(directory: String, basePort: Int, childLogLevel: String = "notice", durability: String = "synced") {
        self.directory = directory
        self.basePort = basePort
        self.childLogLevel = childLogLevel
        self.durability = durability
    }

    package func setExtraArguments(coordinator: [String], node: [String]) {
        extraCoordinatorArguments = coordinator
        extraNodeArguments = node
    }

    /// Generates a key pair per process and one for clients, and an allow-list admitting all of them.
    package func enableCurve(nodes count: Int) throws {
        let keys = directory + "/keys"
        let coordinator = try CurveSecurity.generate(name: "coordinator", directory: keys)
        var allowed: [String] = []
        var nodePublicKeys: [String: String] = [:]
        for id in 1...count {
            let pair = try CurveSecurity.generate(name: "node-\(id)", directory: keys)
            nodePublicKeys["node-\(id)"] = pair.publicKey.z85
            allowed.append("\(pair.publicKey.z85)  # node-\(id)")
        }
        let client = try CurveSecurity.generate(name: "client", directory: keys)
        allowed.append("\(client.publicKey.z85)  # client (flowkit emit, monitor, bench)")
        try (["# CURVE public keys admitted by this cluster's servers, one per line"] + allowed)
            .joined(separator: "\n").appending("\n")
            .write(toFile: keys + "/authorized", atomically: true, encoding: .utf8)
        curve = LocalClusterFile.CurveFiles(
            clientSecretKey: keys + "/client.key",
            coordinatorPublicKey: coordinator.publicKey.z85,
            nodePublicKeys: nodePublicKeys
        )
    }

    private var curveCoordinatorArguments: [String] {
        guard curve != nil else { return [] }
        return ["--curve-secret", directory + "/keys/coordinator.key", "--curve-allow", directory + "/keys/authorized"]
    }

    private func curveNodeArguments(_ id: UInt32) -> [String] {
        guard curve != nil else { return [] }
        return [
            "--curve-secret", directory + "/keys/node-\(id).key", "--curve-allow", directory + "/keys/authorized",
            "--coordinator-key", directory + "/keys/coordinator.pub",
        ]
    }

    /// Starts the coordinator, then the nodes, and writes `cluster.json`.
    package func start(nodes count: Int) async throws -> LocalClusterFile {
        let endpoints = try await startCoordinator()
        var entries: [LocalClusterFile.NodeEntry] = []
        for id in 1...UInt32(count) {
            entries.append(try await startNode(id: id, coordinator: endpoints))
        }
        let file = LocalClusterFile(
            coordinator: .init(
                submit: endpoints.submit, publish: endpoints.publish, sync: endpoints.sync, pid: coordinator!.pid,
                metrics: coordinatorMetrics
            ),
            nodes: entries,
            curve: curve
        )
        try file.write(directory: directory)
        self.file = file
        return file
    }

    private func port(_ offset: Int) -> String {
        basePort == 0 ? "*" : "\(basePort + offset)"
    }

    /// Starts (or restarts, on the same endpoints) the coordinator.
    @discardableResult
    package func startCoordinator() async throws -> CoordinatorEndpoints {
        let known = file?.coordinator
        let arguments = [
            "coordinator",
            "--submit", known?.submit ?? "tcp://127.0.0.1:\(port(0))",
            "--publish", known?.publish ?? "tcp://127.0.0.1:\(port(1))",
            "--sync", known?.sync ?? "tcp://127.0.0.1:\(port(2))",
            "--data-dir", directory + "/coordinator",
            "--durability", durability,
            "--log-level", childLogLevel,
            "--metrics", "127.0.0.1:\(basePort == 0 ? 0 : basePort + 3)",
        ] + curveCoordinatorArguments + extraCoordinatorArguments
        let child = try spawn("coordinator", arguments, restart: coordinator != nil)
        let ready = try await child.waitUntilReady()
        coordinator = child
        guard let submit = ready["submit"], let publish = ready["publish"], let sync = ready["sync"] else {
            throw ChildProcessError("the coordinator's READY line lacks endpoints: \(ready)")
        }
        coordinatorMetrics = ready["metrics"]
        if file != nil { file!.coordinator.pid = child.pid }
        return CoordinatorEndpoints(submit: submit, publish: publish, sync: sync)
    }

    /// Starts (or restarts, on the same client endpoint) node `id`.
    @discardableResult
    package func startNode(id: UInt32, coordinator endpoints: CoordinatorEndpoints? = nil) async throws -> LocalClusterFile.NodeEntry {
        let endpoints = endpoints ?? file.map { CoordinatorEndpoints(submit: $0.coordinator.submit, publish: $0.coordinator.publish, sync: $0.coordinator.sync) }!
        let known = file?.nodes.first { $0.id == id }
        let arguments = [
            "node", "--id", "\(id)",
            "--coordinator", endpoints.submit,
            "--coordinator-publish", endpoints.publish,
            "--coordinator-sync", endpoints.sync,
            "--client", known?.clientEndpoint ?? "tcp://127.0.0.1:\(port(10 + Int(id)))",
            "--data-dir", directory + "/node-\(id)",
            "--log-level", childLogLevel,
            "--metrics", "127.0.0.1:\(basePort == 0 ? 0 : basePort + 20 + Int(id))",
        ] + curveNodeArguments(id) + extraNodeArguments
        let child = try spawn("node-\(id)", arguments, restart: nodes[id] != nil)
        let ready = try await child.waitUntilReady()
        nodes[id] = child
        guard let client = ready["client"] else { throw ChildProcessError("node-\(id)'s READY line lacks its endpoint: \(ready)") }
        let entry = LocalClusterFile.NodeEntry(id: id, name: "node-\(id)", clientEndpoint: client, pid: child.pid, metrics: ready["metrics"])
        if let index = file?.nodes.firstIndex(where: { $0.id == id }) { file!.nodes[index] = entry }
        return entry
    }

    /// Starts this very `flowkit` with `arguments`, its stderr in `name.log` (appended to on a
    /// restart), its stdout (the READY line) in `name.stdout`.
    private func spawn(_ name: String, _ arguments: [String], restart: Bool) throws -> ChildProcess {
        try ChildProcess.spawn(
            arguments: arguments,
            name: name,
            directory: directory,
            stderrPath: "\(directory)/\(name).log",
            appendingStderr: restart,
            whenParentDies: .stopsGracefully
        )
    }

    package func killNode(_ id: UInt32) async { await nodes[id]?.kill9() }
    package func killCoordinator() async { await coordinator?.kill9() }
    package func pauseNode(_ id: UInt32) { nodes[id]?.signal(SIGSTOP) }
    package func resumeNode(_ id: UInt32) { nodes[id]?.signal(SIGCONT) }

    /// Stops the nodes, then the coordinator, gracefully; removes `cluster.json`.
    package func stop() async {
        for node in nodes.values { await node.stop() }
        await coordinator?.stop()
        nodes = [:]
        coordinator = nil
        try? FileManager.default.removeItem(atPath: directory + "/cluster.json")
    }

    package func pids() -> [Int32] {
        (nodes.values.map(\.pid) + [coordinator?.pid].compactMap { $0 })
    }
}
