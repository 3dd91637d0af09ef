#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitProcesses
import FlowKitTools
import Foundation
import Logging
import Synchronization
import Testing

/// A coordinator and nodes running as real `flowkit` processes on loopback, for one test.
///
/// ```swift
/// try await TestCluster.run(nodes: 3) { cluster in
///     let ordered = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/a")
///     try await cluster.waitUntilApplied(ordered.seq)
/// }
/// ```
///
/// Ports are chosen by the OS (`tcp://127.0.0.1:*`); a restarted process binds the ports it had.
/// Every test gets its own temporary directory for logs and the coordinator's data; it is removed
/// when the test passes and kept (its path printed) when it fails. See ``ChildProcess`` for how
/// children are guaranteed to die with the test.
final class TestCluster: Sendable {
    struct NodeHandle: Sendable {
        var id: Int
        var process: ChildProcess
        var clientEndpoint: String
        var client: ClusterClient
        /// `host:port` of its Prometheus endpoint, when started with `--metrics`.
        var metricsEndpoint: String?
    }

    struct State {
        var coordinator: ChildProcess?
        /// With ``Options/coordinators`` above 1: etcd and the replicated coordinators.
        var replicated: ReplicatedCoordinators?
        var endpoints: CoordinatorEndpoints?
        /// What the coordinator's READY line named as its malloc.
        var coordinatorAllocator: String?
        var nodes: [Int: NodeHandle] = [:]
        /// Every process started, dead ones included, for the logs.
        var history: [ChildProcess] = []
        var starts: [String: Int] = [:]
        /// What each node's next start gets (``Options/nodeEnvironment``, then ``setEnvironment(_:ofNode:)``).
        var nodeEnvironment: [Int: [String: String]] = [:]
        /// What the coordinator's next start gets, by id (`coordinator` alone, `c1`… replicated),
        /// once ``setEnvironment(_:ofCoordinator:)`` changed it from ``Options/coordinatorEnvironment``.
        var coordinatorEnvironment: [String: [String: String]] = [:]
    }

    let directory: String
    let binary: String
    let durable: Bool
    let options: Options
    let logger: Logger
    let logLevel: String
    let state = Mutex(State())
    /// With ``Options/networkLab``: the namespaces every process runs in.
    let lab: NetworkLab?

    /// How long a child may take to print READY.
    static let readyTimeout: Duration = .seconds(20)

    private init(durable: Bool, options: Options) throws {
        binary = try Self.findBinary(named: options.binary)
        self.options = options
        var template = Array("\(NSTemporaryDirectory())/flowkit-it-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
        self.durable = durable
        var logger = Logger(label: "flowkit.integration-tests")
        logger.logLevel = .error
        self.logger = logger
        logLevel = ProcessInfo.processInfo.environment["FLOWKIT_IT_LOG_LEVEL"] ?? "info"
        lab = options.networkLab ? NetworkLab(members: Self.labMembers(options)) : nil
    }

    /// Starts a coordinator and `nodes` nodes, runs `body`, and stops everything on every path.
    ///
    /// - Parameters:
    ///   - nodes: How many nodes, with ids 1…`nodes`.
    ///   - durable: Give the coordinator a data directory (so it can be restarted without loss).
    ///   - options: Another binary, extra flags (see ``Options``).
    ///   - body: The test.
    static func run<T>(
        nodes: Int = 3,
        durable: Bool = false,
        options: Options = Options(),
        _ body: (TestCluster) async throws -> T
    ) async throws -> T {
        let cluster = try TestCluster(durable: durable, options: options)
        let failuresBefore = RecordedFailures.count
        let result: T
        // Everything this test starts is found by its process group, not among every process of
        // the machine: other suites' clusters may be running beside it.
        let spawned = SpawnedGroups()
        do {
            result = try await SpawnedGroups.$current.withValue(spawned) {
                try await cluster.start(nodes: nodes)
                return try await body(cluster)
            }
        } catch {
            print("harness: the test failed with \(error); logs of every process follow (kept in \(cluster.directory))")
            print(cluster.diagnostics())
            await cluster.shutDown()
            throw error
        }
        let unclean = await cluster.shutDown()
        #expect(unclean.isEmpty, "processes that did not exit cleanly on SIGTERM: \(unclean)")
        let leftovers = spawned.leftovers
        #expect(leftovers.isEmpty, "processes this test started, left behind: \(leftovers)")
        let failed = RecordedFailures.count > failuresBefore
        if failed {
            print("harness: the test recorded failures; logs of every process follow (kept in \(cluster.directory))")
            print(cluster.diagnostics())
        } else if ProcessInfo.processInfo.environment["FLOWKIT_IT_KEEP_LOGS"] == nil {
            try? FileManager.default.removeItem(atPath: cluster.directory)
        } else {
            print("harness: logs kept in \(cluster.directory)")
        }
        return result
    }

    /// Starts a cluster that the caller must ``shutDown()``; prefer ``run(nodes:durable:options:_:)``.
    static func start(nodes: Int, durable: Bool = false, options: Options = Options()) async throws -> TestCluster {
        let cluster = try TestCluster(durable: durable, options: options)
        do {
            try await cluster.start(nodes: nodes)
        } catch {
            await cluster.shutDown()
            throw error
        }
        return cluster
    }

    private func start(nodes: Int) async throws {
        if let lab {
            NetworkLab.removeStale()
            try lab.setUp()
        }
        if options.coordinators > 1 {
            try await startReplicatedCoordinators()
        } else {
            try await startCoordinator()
        }
        try await startNodes(Array(1...nodes))
        try await waitUntilConnected()
    }

    // MARK: Finding the binary

    /// The `flowkit` binary (or another of the package's executables, `name`): `$FLOWKIT_BINARY`
    /// (for `flowkit`) or `$FLOWKIT_TESTBED_BINARY` (for `flowkit-testbed`), else next to this
    /// test binary (SwiftPM puts both in the same `debug` directory, whatever the scratch path),
    /// else under the package root.
    static func findBinary(named name: String = "flowkit") throws -> String {
        var candidates: [String] = []
        let environment = ProcessInfo.processInfo.environment
        if name == "flowkit", let explicit = environment["FLOWKIT_BINARY"] { candidates.append(explicit) }
        if name == "flowkit-testbed", let explicit = environment["FLOWKIT_TESTBED_BINARY"] { candidates.append(explicit) }
        if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            // …/debug/FlowKitPackageTests.xctest, or on some layouts a binary inside a bundle dir.
            var directory = (me as NSString).deletingLastPathComponent
            for _ in 0..<3 {
                candidates.append("\(directory)/\(name)")
                directory = (directory as NSString).deletingLastPathComponent
            }
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        candidates += ["\(packageRoot)/.build-it/debug/\(name)", "\(packageRoot)/.build/debug/\(name)"]
        if let found = candidates.first(where: { access($0, X_OK) == 0 && !$0.hasSuffix("/") }) { return found }
        throw HarnessError(
            "no \(name) binary found (looked at \(candidates.joined(separator: ", "))): build with 'swift build --build-tests' or set FLOWKIT_BINARY"
        )
    }

    // MARK: Starting and stopping

    func nextName(_ base: String) -> String {
        state.withLock { state in
            let count = (state.starts[base] ?? 0) + 1
            state.starts[base] = count
            return "\(base)#\(count)"
        }
    }

    /// The malloc the coordinator reported in its READY line.
    var coordinatorAllocator: String? { state.withLock { $0.coordinatorAllocator } }

    /// Starts the coordinator: on OS-chosen ports the first time, on the same ports afterwards.
    func startCoordinator() async throws {
        let previous = state.withLock { $0.endpoints }
        var arguments = [
            "coordinator",
            "--submit", previous?.submit ?? "tcp://127.0.0.1:*",
            "--publish", previous?.publish ?? "tcp://127.0.0.1:*",
            "--sync", previous?.sync ?? "tcp://127.0.0.1:*",
            "--log-level", logLevel,
        ]
        if durable { arguments += ["--data-dir", "\(directory)/coordinator-data"] }
        arguments += options.coordinatorArguments
        let process = try ChildProcess.testChild(
            executable: binary, arguments: arguments, name: nextName("coordinator"), directory: directory,
            environment: coordinatorEnvironment(of: "coordinator")
        )
        state.withLock { $0.history.append(process) }
        let line = try await process.waitForLine(prefix: "READY ", timeout: Self.readyTimeout)
        let fields = try Self.readyFields(line, from: process)
        guard let submit = fields["submit"], let publish = fields["publish"], let sync = fields["sync"] else {
            throw HarnessError("\(process) printed a READY line without submit, publish and sync: \(line)")
        }
        let endpoints = CoordinatorEndpoints(submit: submit, publish: publish, sync: sync)
        if let previous, previous != endpoints {
            throw HarnessError("the restarted coordinator bound \(endpoints), not its old \(previous)")
        }
        state.withLock { state in
            state.coordinator = process
            state.endpoints = endpoints
            state.coordinatorAllocator = fields["allocator"]
        }
    }

    /// Starts nodes with the given ids (at once, then waits for all their READY lines). A node
    /// that ran before binds its old client port, and its client reconnects by itself.
    func startNodes(_ ids: [Int]) async throws {
        guard let endpoints = state.withLock({ $0.endpoints }) else { throw HarnessError("start the coordinator first") }
        var started: [(Int, ChildProcess, String?)] = []
        for id in ids {
            let previous = state.withLock { $0.nodes[id] }
            var arguments = [
                "node", "--id", "\(id)",
                "--coordinator", endpoints.submit,
                "--coordinator-publish", endpoints.publish,
                "--coordinator-sync", endpoints.sync,
                "--client", previous?.clientEndpoint ?? lab.map { "tcp://\($0.address("n\(id)")):7410" } ?? "tcp://127.0.0.1:*",
                "--log-level", logLevel,
            ] + nodeArguments(id)
            if let others = state.withLock({ $0.replicated?.others(than: endpoints) }), !others.isEmpty {
                arguments += ["--other-coordinators", others.map(\.submit).joined(separator: ",")]
            }
            let environment = state.withLock { $0.nodeEnvironment[id] ?? options.nodeEnvironment[id] ?? [:] }
            let process = try ChildProcess.testChild(
                executable: binary, arguments: arguments, name: nextName("node-\(id)"), directory: directory, environment: environment,
                namespace: lab?.namespace("n\(id)")
            )
            state.withLock { $0.history.append(process) }
            started.append((id, process, previous?.clientEndpoint))
        }
        for (id, process, previousEndpoint) in started {
            let line = try await process.waitForLine(prefix: "READY ", timeout: Self.readyTimeout)
            let fields = try Self.readyFields(line, from: process)
            guard let endpoint = fields["client"], fields["id"] == "\(id)" else {
                throw HarnessError("\(process) printed an unexpected READY line: \(line)")
            }
            if let previousEndpoint, previousEndpoint != endpoint {
                throw HarnessError("the restarted \(process) bound \(endpoint), not its old \(previousEndpoint)")
            }
            let existing = state.withLock { $0.nodes[id]?.client }
            let client: ClusterClient
            if let existing {
                client = existing
            } else {
                client = try await ClusterClient(endpoint: endpoint, timeout: .seconds(15), logger: logger)
            }
            let metrics = fields["metrics"].flatMap { $0.isEmpty ? nil : $0 }
            state.withLock {
                $0.nodes[id] = NodeHandle(id: id, process: process, clientEndpoint: endpoint, client: client, metricsEndpoint: metrics)
            }
        }
    }

    private static func readyFields(_ line: String, from process: ChildProcess) throws -> [String: String] {
        let json = line.dropFirst("READY ".count)
        guard let fields = try? JSONDecoder().decode([String: String].self, from: Data(json.utf8)) else {
            throw HarnessError("\(process) printed a READY line that is not a JSON object of strings: \(line)")
        }
        return fields
    }

    /// Waits until every node reports a heartbeat from the coordinator.
    func waitUntilConnected(timeout: Duration = .seconds(15)) async throws {
        for id in nodeIDs {
            _ = try await eventually("node \(id) connected to the coordinator", timeout: timeout) {
                try await self.client(id).status().connected ? true : nil
            }
        }
    }

    /// `kill -9` the coordinator and reap it.
    func killCoordinator() async {
        guard let process = state.withLock({ $0.coordinator }) else { return }
        await process.kill9()
    }

    /// `kill -9` a node and reap it. Its client stays, and reconnects when the node comes back.
    func killNode(_ id: Int) async {
        guard let process = state.withLock({ $0.nodes[id]?.process }) else { return }
        await process.kill9()
    }

    /// Sends `signal` to node `id` (SIGSTOP to pause it, SIGCONT to let it go on).
    func signalNode(_ id: Int, _ signal: Int32) {
        state.withLock { $0.nodes[id]?.process }?.signal(signal)
    }

    /// Graceful stop of everything: clients closed, nodes and coordinator sent SIGTERM (SIGKILL
    /// after a grace period), all reaped. Safe to call more than once and from a cancelled task.
    ///
    /// - Returns: The processes that did not exit with status 0 on SIGTERM, and how they ended
    ///   (those killed on purpose by the test are not listed).
    @discardableResult
    func shutDown() async -> [String] {
        let (nodes, coordinator, history) = state.withLock { state in
            (Array(state.nodes.values), state.coordinator, state.history)
        }
        for node in nodes { await node.client.close() }
        var unclean: [String] = []
        let outcomes = await withTaskGroup(of: (ChildProcess, ChildProcess.StopOutcome).self) { group in
            for node in nodes { group.addTask { (node.process, await node.process.stop()) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (process, outcome) in outcomes where !outcome.isClean { unclean.append("\(process): \(outcome)") }
        unclean += await stopReplicatedCoordinators()
        if let coordinator, state.withLock({ $0.replicated == nil }) {
            let outcome = await coordinator.stop()
            if !outcome.isClean { unclean.append("\(coordinator): \(outcome)") }
        }
        // Anything else ever started (killed ones are reaped already; this catches the rest).
        for process in history where process.isRunning {
            unclean.append("\(process): \(await process.stop(grace: .seconds(1)))")
        }
        lab?.tearDown()
        return unclean
    }

    // MARK: Access

    var nodeIDs: [Int] { state.withLock { $0.nodes.keys.sorted() } }

    /// The client connected to node `id`.
    func client(_ id: Int) -> ClusterClient {
        guard let client = state.withLock({ $0.nodes[id]?.client }) else {
            preconditionFailure("no node \(id) in this cluster")
        }
        return client
    }

    var clients: [ClusterClient] { nodeIDs.map(client) }

    func node(_ id: Int) -> NodeHandle? { state.withLock { $0.nodes[id] } }

    var coordinatorEndpoints: CoordinatorEndpoints? { state.withLock { $0.endpoints } }

    var coordinatorProcess: ChildProcess? { state.withLock { $0.coordinator } }

    /// The stderr tail of every process started, for a failure message.
    func diagnostics(lines: Int = 40) -> String {
        state.withLock { $0.history }.map { $0.stderrReport(lines: lines) }.joined(separator: "\n")
    }

    // MARK: Waiting for the cluster

    /// Waits until every node has applied at least `seq`.
    ///
    /// - Returns: Each node's status at that point, by node id.
    @discardableResult
    func waitUntilApplied(_ seq: UInt64, timeout: Duration = .seconds(20)) async throws -> [Int: NodeStatus] {
        var result: [Int: NodeStatus] = [:]
        for id in nodeIDs {
            // Typed: with `result[id] =` the probe's `nil` would be an `Optional<NodeStatus>`
            // value, ending the wait at once.
            let status: NodeStatus = try await eventually("node \(id) applied \(seq)", timeout: timeout) {
                let status = try await self.client(id).status()
                return status.applied >= seq ? status : nil
            }
            result[id] = status
        }
        return result
    }

    /// Each node's state of `address`, once it has applied `minApplied`.
    func states(of address: String, minApplied: UInt64 = 0) async throws -> [Int: ClusterClient.State] {
        var result: [Int: ClusterClient.State] = [:]
        for id in nodeIDs { result[id] = try await client(id).query(address, minApplied: minApplied) }
        return result
    }
}
