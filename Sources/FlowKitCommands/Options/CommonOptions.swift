#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import FlowKitCluster
import Foundation
import Logging
import ZeroMQ

/// `--config` and `--log-level`, shared by the commands that run a process.
package struct CommonOptions: ParsableArguments {
    package init() {}

    @Option(name: .customLong("config"), help: "A JSON config file (see deploy/flowkit.json). Also $FLOWKIT_CONFIG.")
    package var configPath: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error or critical. Also $FLOWKIT_LOG_LEVEL.")
    package var logLevel: String?

    @Option(help: "Which ZMTP implementation carries the sockets: native (FlowKit's own, on the process's I/O loop thread) or libzmq. CURVE and endpoints other than tcp:// always use libzmq. Also $FLOWKIT_ENGINE. Default: native.")
    package var engine: String?

    package func settings() throws -> Settings {
        try Settings(path: configPath)
    }

    /// The `engine` setting.
    package func engine(settings: Settings) throws -> SocketEngine {
        let text = settings.string(nil, "engine", flag: engine) ?? SocketEngine.native.rawValue
        guard let engine = SocketEngine(rawValue: text.lowercased()) else {
            throw ValidationError("--engine must be native or libzmq; got \"\(text)\"")
        }
        return engine
    }

    /// Bootstraps swift-log to standard error at the chosen level and returns a logger.
    package func makeLogger(label: String, settings: Settings) throws -> Logger {
        let text = settings.string(nil, "log-level", flag: logLevel) ?? "info"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical; got \"\(text)\"")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}

/// Where a client command finds a node: an explicit endpoint, a node of the local cluster by name,
/// or by default the first node of the local cluster.
package struct NodeTargetOptions: ParsableArguments {
    package init() {}

    @Option(name: .shortAndLong, help: "The node: a client endpoint (tcp://host:port) or a local cluster node's name (node-2). Default: node-1 of the local cluster.")
    package var node: String?

    @Option(help: "The local cluster's directory, where 'flowkit cluster' writes cluster.json.")
    package var clusterDir: String = LocalClusterFile.defaultDirectory

    @Option(help: "Seconds to wait for an answer.")
    package var timeout: Double = 10

    @Flag(help: "Print the result as one line of JSON.")
    package var json = false

    @OptionGroup package var curve: CurveClientOptions

    package func endpoint() throws -> String {
        try resolve().endpoint
    }

    /// The node's endpoint, and its name in the local cluster if it is one of its nodes.
    private func resolve() throws -> (endpoint: String, name: String?, file: LocalClusterFile?) {
        if let node, node.contains("://") { return (node, nil, try? LocalClusterFile.read(directory: clusterDir)) }
        let file = try LocalClusterFile.read(directory: clusterDir)
        let name = node ?? file.nodes.first?.name ?? "node-1"
        guard let match = file.nodes.first(where: { $0.name == name }) else {
            throw ValidationError("no node named \(name) in \(clusterDir)/cluster.json; it has \(file.nodes.map(\.name).joined(separator: ", "))")
        }
        return (match.clientEndpoint, name, file)
    }

    /// A client for the chosen node, with CURVE when the flags or the local cluster call for it.
    package func makeClient() async throws -> ClusterClient {
        let (endpoint, name, file) = try resolve()
        let (transport, serverKey) = try curve.resolve(localCluster: name == nil ? nil : file) { file in
            name.flatMap { file.curve?.nodePublicKeys[$0] }
        }
        return try await ClusterClient(
            endpoint: endpoint,
            timeout: timeoutDuration,
            transport: transport,
            serverPublicKey: serverKey,
            logger: makeLogger()
        )
    }

    package var timeoutDuration: Duration { .milliseconds(Int(timeout * 1_000)) }

    package func makeLogger() -> Logger {
        var logger = Logger(label: "flowkit.client")
        logger.logLevel = .error
        return logger
    }
}

/// The endpoints of the local cluster, written by `flowkit cluster` for the other commands.
package struct LocalClusterFile: Codable, Sendable {
    package struct NodeEntry: Codable, Sendable {
        package var id: UInt32
        package var name: String
        package var clientEndpoint: String
        package var pid: Int32
        /// `host:port` of the node's Prometheus endpoint.
        package var metrics: String?
        /// The command line that started it: run it to start the node again by hand.
        package var command: [String]?
    }

    /// The coordinator; with replicated coordinators, the first of ``coordinators``.
    package var coordinator: CoordinatorEntry
    /// Replicated coordinators: every one (only one leads at a time).
    package var coordinators: [CoordinatorEntry]?
    /// Replicated coordinators: the client URL of the etcd they elect their leader in.
    package var etcd: String?
    /// Replicated coordinators: etcd's process, when the local cluster started it.
    package var etcdPid: Int32?
    package var nodes: [NodeEntry]
    /// Present when the cluster runs with CURVE: where the client key is, and every server's
    /// public key, so the client commands can connect without flags.
    package var curve: CurveFiles?
    /// The URL of the web dashboard `flowkit cluster` serves, once it listens.
    package var dashboard: String?
    /// Its token, which every request to it needs (`Authorization: Bearer <token>`); the reason
    /// this file is readable by its owner alone.
    package var dashboardToken: String?

    package struct CurveFiles: Codable, Sendable {
        package var clientSecretKey: String
        package var coordinatorPublicKey: String
        package var nodePublicKeys: [String: String]
    }

    package struct CoordinatorEntry: Codable, Sendable {
        /// Replicated coordinators: its id (`c1`, …).
        package var id: String?
        package var submit: String
        package var publish: String
        package var sync: String
        package var pid: Int32
        package var metrics: String?
        /// The command line that started it: run it to start the coordinator again by hand.
        package var command: [String]?
    }

    package static let defaultDirectory = ".flowkit/cluster"

    /// Every coordinator: the replicated ones, or the one.
    package var allCoordinators: [CoordinatorEntry] { coordinators ?? [coordinator] }

    package static func read(directory: String) throws -> LocalClusterFile {
        let path = directory + "/cluster.json"
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError(
                "no local cluster found at \(path): start one with 'flowkit cluster', or pass --node tcp://host:port"
            )
        }
        return try JSONDecoder().decode(LocalClusterFile.self, from: data)
    }

    /// Writes `cluster.json`, readable and writable by its owner alone (it holds the dashboard's
    /// token and the path of the client's secret key): a file of mode 600 renamed into place.
    package func write(directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try Self.writePrivately(try encoder.encode(self), to: directory + "/cluster.json")
    }

    private static func writePrivately(_ data: Data, to path: String) throws {
        let temporary = path + ".\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ValidationError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let count = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                done += count
            }
            return done
        }
        close(fd)
        guard written == data.count, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw ValidationError("cannot write \(path): \(reason)")
        }
    }
}
