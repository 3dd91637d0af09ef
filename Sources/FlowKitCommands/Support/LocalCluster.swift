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
    private var coordinatorCommand: [String]?
    /// How many coordinators: 1, or an odd number of replicated ones with an etcd.
    package let coordinatorCount: Int
    /// Replicated coordinators by id, and the etcd they elect their leader in.
    package private(set) var replicated: [String: ChildProcess] = [:]
    package private(set) var etcd: EtcdServer?
    /// The prefix of the cluster's keys in etcd.
    package static let etcdPrefix = "/flowkit/cluster"
    /// Each supervised node's restarts in a row and when it may start again (``superviseNodes(say:)``).
    var restarts: [UInt32: Restart] = [:]
    /// Nodes that exited cleanly (stopped by hand): left stopped, said once.
    var leftStopped: Set<UInt32> = []
    /// Coordinator processes seen exited, by pid: said once.
    var reapedCoordinators: Set<Int32> = []
    /// Set by ``stop()``: nothing is restarted from then on.
    var stopping = false
    /// Failures in a row of each node when it was last restarted.
    var lastRestartCount: [UInt32: Int] = [:]

    /// How long a restarted node must run before its failures stop counting in a row.
    package static let stableAfter: Duration = .seconds(60)

    package init(directory: String, basePort: Int, childLogLevel: String = "notice", durability: String = "synced", coordinators: Int = 1) {
        self.directory = directory
        self.basePort = basePort
        self.childLogLevel = childLogLevel
        self.durability = durability
        self.coordinatorCount = coordinators
    }

    package func setExtraArguments(coordinator: [String], node: [String]) {
        extraCoordinatorArguments = coordinator
        extraNodeArguments = node
    }

    /// Generates a key pair per process and one for clients, an allow-list admitting all of them,
    /// and one of the node keys alone (`keys/nodes`: the coordinators' submit sockets admit only these).
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
        try (["# CURVE public keys of this cluster's nodes: the only ones that may say HELLO to a coordinator"] + allowed)
            .joined(separator: "\n").appending("\n")
            .write(toFile: keys + "/nodes", atomically: true, encoding: .utf8)
        // Replicated coordinators share the key pair; a standby fetches from the leader with it.
        allowed.append("\(coordinator.publicKey.z85)  # coordinator (standbys fetch from the leader)")
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
        return [
            "--curve-secret", directory + "/keys/coordinator.key", "--curve-allow", directory + "/keys/authorized",
            "--curve-allow-nodes", directory + "/keys/nodes",
        ]
    }

    private func curveNodeArguments(_ id: UInt32) -> [String] {
        guard curve != nil else { return [] }
        return [
            "--curve-secret", directory + "/keys/node-\(id).key", "--curve-allow", directory + "/keys/authorized",
            "--coordinator-key", directory + "/keys/coordinator.pub",
        ]
    }

    /// Starts the coordinator (or etcd and the replicated coordinators), then the nodes, and
    /// writes `cluster.json`.
    package func start(nodes count: Int) async throws -> LocalClusterFile {
        let coordinators: [LocalClusterFile.CoordinatorEntry]
        if coordinatorCount > 1 {
            coordinators = try await startReplicatedCoordinators()
        } else {
            let endpoints = try await startCoordinator()
            coordinators = [
                .init(submit: endpoints.submit, publish: endpoints.publish, sync: endpoints.sync, pid: coordinator!.pid, metrics: coordinatorMetrics,
                    command: coordinatorCommand)
            ]
        }
        // A partial file first: startNode finds the coordinators in it.
        file = LocalClusterFile(
            coordinator: coordinators[0], coordinators: coordinatorCount > 1 ? coordinators : nil, etcd: etcd?.clientURL,
            etcdPid: etcd?.process.pid, nodes: [], curve: curve
        )
        var entries: [LocalClusterFile.NodeEntry] = []
        for id in 1...UInt32(count) {
            entries.append(try await startNode(id: id))
        }
        file!.nodes = entries
        try file!.write(directory: directory)
        return file!
    }

    /// Starts etcd, then ``coordinatorCount`` coordinators that elect their leader in it, and
    /// waits until one leads.
    private func startReplicatedCoordinators() async throws -> [LocalClusterFile.CoordinatorEntry] {
        let etcd = try await EtcdServer.start(
            directory: directory, clientPort: basePort == 0 ? 0 : basePort + 50, peerPort: basePort == 0 ? 0 : basePort + 51
        )
        self.etcd = etcd
        var endpoints: [(id: String, submit: Int)] = []
        for index in 1...coordinatorCount {
            // Submit, publish and sync on consecutive ports: the convention --coordinators relies on.
            let submit = basePort == 0 ? try FreePorts.run(3) : basePort + (index == 1 ? 0 : 30 + 3 * (index - 2))
            endpoints.append(("c\(index)", submit))
        }
        let list = endpoints.map { "\($0.id)=tcp://127.0.0.1:\($0.submit)" }.joined(separator: ",")
        var entries: [LocalClusterFile.CoordinatorEntry] = []
        for (index, (id, _)) in endpoints.enumerated() {
            let arguments = [
                "coordinator", "--id", id, "--coordinators", list, "--etcd", etcd.clientURL, "--etcd-prefix", Self.etcdPrefix,
                "--data-dir", directory + "/\(id)",
                "--durability", durability,
                "--log-level", childLogLevel,
                "--metrics", "127.0.0.1:\(basePort == 0 ? 0 : basePort + (index == 0 ? 3 : 40 + index))",
            ] + curveCoordinatorArguments + extraCoordinatorArguments
            let child = try spawn(id, arguments, restart: false)
            let ready = try await child.waitUntilReady()
            replicated[id] = child
            guard let submit = ready["submit"], let publish = ready["publish"], let sync = ready["sync"] else {
                throw ChildProcessError("\(id)'s READY line lacks endpoints: \(ready)")
            }
            entries.append(
                .init(id: id, submit: submit, publish: publish, sync: sync, pid: child.pid, metrics: ready["metrics"], command: Self.commandLine(arguments))
            )
        }
        let election = EtcdElection(client: try EtcdClient(endpoints: [etcd.clientURL]), prefix: Self.etcdPrefix)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? await election.read().0.leader) == nil {
            guard ContinuousClock.now < deadline else { throw ChildProcessError("no coordinator took the lead within 20 s; their logs are in \(directory)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        return entries
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
        coordinatorCommand = Self.commandLine(arguments, bound: ["--submit": submit, "--publish": publish, "--sync": sync])
        if file != nil { file!.coordinator.pid = child.pid }
        return CoordinatorEndpoints(submit: submit, publish: publish, sync: sync)
    }

    /// Starts (or restarts, on the same client endpoint) node `id`, after the coordinators.
    @discardableResult
    package func startNode(id: UInt32) async throws -> LocalClusterFile.NodeEntry {
        guard let file else { throw ChildProcessError("start the coordinators before node-\(id)") }
        let coordinator = file.coordinator
        let others = file.allCoordinators.dropFirst().map(\.submit)
        let known = file.nodes.first { $0.id == id }
        let arguments = [
            "node", "--id", "\(id)",
            "--coordinator", coordinator.submit,
            "--coordinator-publish", coordinator.publish,
            "--coordinator-sync", coordinator.sync,
        ] + (others.isEmpty ? [] : ["--other-coordinators", others.joined(separator: ",")]) + [
            "--client", known?.clientEndpoint ?? "tcp://127.0.0.1:\(port(10 + Int(id)))",
            "--data-dir", directory + "/node-\(id)",
            "--log-level", childLogLevel,
            "--metrics", "127.0.0.1:\(basePort == 0 ? 0 : basePort + 20 + Int(id))",
        ] + curveNodeArguments(id) + extraNodeArguments
        let child = try spawn("node-\(id)", arguments, restart: nodes[id] != nil)
        let ready = try await child.waitUntilReady()
        nodes[id] = child
        guard let client = ready["client"] else { throw ChildProcessError("node-\(id)'s READY line lacks its endpoint: \(ready)") }
        let entry = LocalClusterFile.NodeEntry(
            id: id, name: "node-\(id)", clientEndpoint: client, pid: child.pid, metrics: ready["metrics"],
            command: Self.commandLine(arguments, bound: ["--client": client])
        )
        if let index = self.file?.nodes.firstIndex(where: { $0.id == id }) { self.file!.nodes[index] = entry }
        return entry
    }

    /// The command line a child was started with, for `cluster.json`.
    /// - Parameter bound: Options whose value becomes what the process bound (a `*` port as the
    ///   port the system chose), so the command starts it where the cluster knows it.
    private static func commandLine(_ arguments: [String], bound: [String: String] = [:]) -> [String] {
        var command = [ChildProcess.thisExecutable] + arguments
        for index in command.indices.dropLast() {
            if let value = bound[command[index]] { command[index + 1] = value }
        }
        return command
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

    /// Stops node `id` gracefully (SIGTERM) and leaves it out of the cluster from now on.
    package func stopNode(_ id: UInt32) async {
        _ = await nodes.removeValue(forKey: id)?.stop()
        file?.nodes.removeAll { $0.id == id }
    }
    package func killCoordinator() async { await coordinator?.kill9() }
    package func pauseNode(_ id: UInt32) { nodes[id]?.signal(SIGSTOP) }
    package func resumeNode(_ id: UInt32) { nodes[id]?.signal(SIGCONT) }

    /// Records the URL of the dashboard serving this cluster in `cluster.json`.
    package func setDashboard(_ url: String, token: String?) throws {
        guard file != nil else { return }
        file!.dashboard = url
        file!.dashboardToken = token
        try file!.write(directory: directory)
    }

    /// Stops the nodes together, then the coordinators, then etcd, gracefully; removes
    /// `cluster.json`. (Nodes of a million instances stopping in turn took 9 s.)
    package func stop() async {
        stopping = true
        await Self.stopTogether(Array(nodes.values))
        await Self.stopTogether([coordinator].compactMap { $0 } + replicated.values)
        await etcd?.process.stop()
        nodes = [:]
        coordinator = nil
        replicated = [:]
        etcd = nil
        try? FileManager.default.removeItem(atPath: directory + "/cluster.json")
    }

    private static func stopTogether(_ children: [ChildProcess]) async {
        await withDiscardingTaskGroup { group in for child in children { group.addTask { await child.stop() } } }
    }

    package func pids() -> [Int32] {
        nodes.values.map(\.pid) + [coordinator?.pid, etcd?.process.pid].compactMap { $0 } + replicated.values.map(\.pid)
    }
}
