import ArgumentParser
import FlowKitCluster
import FlowKitCommands
import Foundation
import Logging
import Synchronization

/// The cluster under load: one the bench started (and always stops), or a running
/// `flowkit cluster` it attached to through its `cluster.json`.
final class BenchTarget: Sendable {
    let file: LocalClusterFile
    /// The cluster the bench started, if it did.
    let local: LocalCluster?
    /// Where the started cluster keeps its data, removed at the end unless kept.
    let dataDirectory: String?
    let keepData: Bool
    /// One client per node, for status and the end check's queries.
    let clients: [ClusterClient]
    let nodes: [LoadConnections.NodeEndpoint]
    let transport: TransportOptions
    let head: HeadTracker
    /// Where the started cluster's processes write their hop traces, with `--trace`.
    let traceDirectory: String?

    private init(
        file: LocalClusterFile, local: LocalCluster?, dataDirectory: String?, keepData: Bool, traceDirectory: String? = nil, logger: Logger
    ) async throws {
        self.traceDirectory = traceDirectory
        self.file = file
        self.local = local
        self.dataDirectory = dataDirectory
        self.keepData = keepData
        var nodes: [LoadConnections.NodeEndpoint] = []
        var clients: [ClusterClient] = []
        var transport = TransportOptions()
        for node in file.nodes.sorted(by: { $0.id < $1.id }) {
            let (nodeTransport, key) = try CurveClientOptions.resolve(localCluster: file) { $0.curve?.nodePublicKeys[node.name] }
            transport = nodeTransport
            nodes.append(.init(name: node.name, endpoint: node.clientEndpoint, serverKey: key))
            clients.append(
                try await ClusterClient(endpoint: node.clientEndpoint, timeout: .seconds(10), transport: nodeTransport, serverPublicKey: key, logger: logger)
            )
        }
        self.nodes = nodes
        self.clients = clients
        self.transport = transport
        let (monitorTransport, coordinatorKey) = try CurveClientOptions.resolve(localCluster: file) { $0.curve?.coordinatorPublicKey }
        head = try await HeadTracker(
            publishEndpoints: file.allCoordinators.map(\.publish), transport: monitorTransport, serverKey: coordinatorKey, logger: logger
        )
    }

    /// Starts a coordinator and `nodes` nodes on OS-chosen loopback ports, in a fresh directory.
    ///
    /// - Throws: ``BenchError`` with the failing child's log tail.
    /// - Parameters:
    ///   - traceEvery: Trace one seq in this many through every hop (`--trace`).
    ///   - restAfterMs: Every process's `--rest-after-ms`; nil: theirs.
    ///   - logLevel: Every process's `--log-level`.
    static func start(
        nodes: Int, coordinators: Int = 1, durability: String, dataDirectory: String?, traceEvery: UInt64? = nil, restAfterMs: Int? = nil,
        logLevel: String = "warning", logger: Logger
    ) async throws -> BenchTarget {
        let directory = dataDirectory ?? NSTemporaryDirectory() + "flowkit-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cluster = LocalCluster(directory: directory, basePort: 0, childLogLevel: logLevel, durability: durability, coordinators: coordinators)
        var traceDirectory: String?
        var arguments = restAfterMs.map { ["--rest-after-ms", "\($0)"] } ?? []
        if let traceEvery {
            let trace = directory + "/trace"
            try FileManager.default.createDirectory(atPath: trace, withIntermediateDirectories: true)
            arguments += ["--trace-dir", trace, "--trace-every", "\(traceEvery)"]
            traceDirectory = trace
        }
        await cluster.setExtraArguments(coordinator: arguments, node: arguments)
        do {
            let file = try await cluster.start(nodes: nodes)
            return try await BenchTarget(
                file: file, local: cluster, dataDirectory: directory, keepData: dataDirectory != nil, traceDirectory: traceDirectory, logger: logger
            )
        } catch {
            await cluster.stop()
            throw BenchError(.clusterStart, "could not start the cluster (logs in \(directory)): \(error)")
        }
    }

    /// Attaches to a running `flowkit cluster`.
    static func attach(directory: String, logger: Logger) async throws -> BenchTarget {
        guard FileManager.default.fileExists(atPath: directory + "/cluster.json") else {
            throw BenchError(
                .attach,
                "no running cluster at \(directory) (no cluster.json): start one with 'flowkit cluster --dir \(directory) --no-demo', or run 'flowkit bench' without --attach to let it start its own"
            )
        }
        let file = try LocalClusterFile.read(directory: directory)
        return try await BenchTarget(file: file, local: nil, dataDirectory: nil, keepData: true, logger: logger)
    }

    /// The coordinator, the nodes and the bench, for CPU and memory.
    var processes: WatchedProcesses {
        var pids: [(String, Int32)] = file.allCoordinators.map { ($0.id ?? "coordinator", $0.pid) }
        var metrics: [String: String] = [:]
        for coordinator in file.allCoordinators { metrics[coordinator.id ?? "coordinator"] = coordinator.metrics }
        if let etcd = file.etcdPid { pids.append(("etcd", etcd)) }
        for node in file.nodes.sorted(by: { $0.id < $1.id }) {
            pids.append((node.name, node.pid))
            metrics[node.name] = node.metrics
        }
        pids.append(("bench", getpid()))
        return WatchedProcesses(pids: pids, metrics: metrics)
    }

    /// Every node's status, in node order.
    func statuses() async throws -> [NodeStatus] {
        var statuses: [NodeStatus] = []
        for client in clients { statuses.append(try await client.status()) }
        return statuses
    }

    /// Waits until every node is connected to the coordinator.
    func waitUntilReady(timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let statuses = try? await statuses(), statuses.allSatisfy(\.connected) { return }
            guard ContinuousClock.now < deadline else {
                throw BenchError(.clusterStart, "the nodes did not all connect to the coordinator within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Closes the clients and stops the cluster the bench started; removes its data.
    func shutDown() async {
        await head.close()
        for client in clients { await client.close() }
        guard let local else { return }
        await local.stop()
        if let dataDirectory, !keepData { try? FileManager.default.removeItem(atPath: dataDirectory) }
    }

    /// The last lines of each child's log, for an error message.
    func logTails() async -> String {
        guard let dataDirectory else { return "" }
        var text = ""
        for name in file.allCoordinators.map({ $0.id ?? "coordinator" }) + file.nodes.map(\.name) {
            let log = (try? String(contentsOfFile: "\(dataDirectory)/\(name).log", encoding: .utf8)) ?? ""
            let tail = log.split(separator: "\n").suffix(5)
            if !tail.isEmpty { text += "\n--- \(name).log ---\n" + tail.joined(separator: "\n") }
        }
        return text
    }
}

/// A bench failure with what to do about it.
struct BenchError: Error, CustomStringConvertible {
    enum Code: Sendable { case clusterStart, attach, baseline, input }
    var code: Code
    var message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }
}
