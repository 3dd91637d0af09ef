import ArgumentParser
import FlowKitCluster
import Foundation
import Logging
import ZeroMQ

/// `flowkit dashboard`: a live web page of a running cluster.
struct DashboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dashboard",
        abstract: "Serve a live web dashboard of a running cluster: the head, nodes, entries, alarms; emit and cancel.",
        discussion: """
            Attaches to a cluster by its directory (the local one by default) or --coordinator, and \
            serves one page (embedded in this binary; nothing is fetched from elsewhere) that shows \
            the head and the rate, each node's applied seq, lag, liveness, effects and digest, the \
            coordinators, alarms, the latest entries (filtered by flow or instance), one instance's \
            state as it changes; and emits and cancels through a node. It is fed the JSON lines \
            of 'flowkit monitor --json', over a WebSocket at /live (docs/DASHBOARD.md). It listens \
            on 127.0.0.1 unless --listen says otherwise. Every request needs this run's token: the \
            URL it prints carries it (docs/SECURITY.md, "The dashboard"). With CURVE it connects \
            with the cluster's client key (or --curve-secret) and the page says which.
              flowkit dashboard
              flowkit dashboard --listen 127.0.0.1:0 --duration 60
            """
    )

    @OptionGroup var target: CoordinatorTargetOptions
    @OptionGroup var curve: CurveClientOptions

    @Option(help: "The local cluster's directory, when --coordinator is not given.")
    var clusterDir = LocalClusterFile.defaultDirectory

    @Option(help: "Where to serve the page: host:port (port 0: any free one).")
    var listen = "127.0.0.1:7480"

    @Option(help: "A node the page emits, cancels and reads state through, as name=endpoint; repeat it. The local cluster's nodes by default.")
    var node: [String] = []

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Flag(help: "Serve without a token (loopback only): any program of any user of this machine may then use it.")
    var noToken = false

    func validate() throws {
        guard Dashboard.parse(listen: listen) != nil else { throw ValidationError("--listen is host:port, e.g. 127.0.0.1:7480; got \(listen)") }
        for entry in node where !entry.contains("=") {
            throw ValidationError("--node is name=endpoint, e.g. node-1=tcp://127.0.0.1:7411; got \(entry)")
        }
    }

    func run() async throws {
        let logger = {
            var logger = Logger(label: "flowkit.dashboard")
            logger.logLevel = .warning
            return logger
        }()
        let (host, port) = Dashboard.parse(listen: listen)!
        do {
            let settings = try Settings(path: nil)
            let file = try? LocalClusterFile.read(directory: clusterDir)
            let publishEndpoints = try target.publishEndpoints(settings: settings, section: "monitor", clusterDir: clusterDir)
            let (transport, serverKey) = try curve.resolve(localCluster: file) { $0.curve?.coordinatorPublicKey }
            let nodes = try dashboardNodes(file: file)
            if let warning = Dashboard.warning(host: host) { logger.warning("\(warning)") }
            let curveNote = transport.curve.map { _ in "CURVE on: this dashboard connects with " + (curve.curveSecret ?? "the cluster's client key") }
            let server = DashboardServer(
                host: host, port: port, access: try DashboardAccess(listenHost: host, token: !noToken), hub: DashboardHub(), nodes: nodes,
                transport: transport, curveNote: curveNote, logger: logger
            )
            let stop = StopFlag()
            try await ShutdownService.run(logger: logger) {
                let deadline = duration.map { ContinuousClock.now.advanced(by: .milliseconds(Int($0 * 1_000))) }
                // Until the server fails, a signal stops it, or the duration is up.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        try await Dashboard.run(server, publishEndpoints: publishEndpoints, serverKey: serverKey) { url in
                            printFlushed("dashboard: \(url)" + (Dashboard.warning(host: host).map { " (\($0))" } ?? ""))
                        }
                    }
                    group.addTask {
                        while !stop.isSet, deadline.map({ ContinuousClock.now < $0 }) ?? true {
                            try await Task.sleep(for: .milliseconds(100))
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } stop: {
                stop.set()
            }
        } catch is CancellationError {
            return
        } catch {
            throw fail(error)
        }
    }

    /// The nodes named with --node, or the local cluster's.
    private func dashboardNodes(file: LocalClusterFile?) throws -> [DashboardServer.Node] {
        if !node.isEmpty {
            return node.map { entry in
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                return DashboardServer.Node(name: parts[0], clientEndpoint: parts[1])
            }
        }
        guard let file else { return [] }
        return try file.nodes.map { node in
            DashboardServer.Node(
                name: node.name, clientEndpoint: node.clientEndpoint,
                publicKey: try file.curve?.nodePublicKeys[node.name].map { try CurveKey(z85: $0) }
            )
        }
    }
}
