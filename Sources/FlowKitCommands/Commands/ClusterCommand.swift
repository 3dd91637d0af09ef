import ArgumentParser
import FlowKitCluster
import Foundation
import Logging
import ZeroMQ

/// `flowkit cluster`: a coordinator and nodes on loopback, in one command.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Run a local cluster: a coordinator and nodes as child processes, a demo, and a live view.",
        discussion: """
            With no arguments: a coordinator and 3 nodes on 127.0.0.1, \
            their data in .flowkit/cluster, a short demo workload, then a live view until q or Ctrl-C (see flowkit monitor), \
            and a web dashboard at the URL it prints, http://127.0.0.1:7480/?token=… (see flowkit dashboard; \
            --no-dashboard turns it off). Other commands find this cluster through .flowkit/cluster/cluster.json: \
            'flowkit emit counter/a {"increment":{}}', 'flowkit monitor', 'flowkit status'. \
            Children die with this process, even if it is killed.

            The ports it opens, from --base-port (7400): the coordinator's submit, publish and sync 7400-7402 \
            and its metrics 7403; node N's client socket 7410+N and its metrics 7420+N; the dashboard 7480. \
            With --coordinators 3 (or 5, 7) also etcd's client and peer ports 7450-7451, coordinator cK's \
            three sockets from 7430+3(K-2) (c2 7430-7432, c3 7433-7435) and its metrics 7439+K (c2 7441); \
            c1 takes the single coordinator's. --base-port 0 lets the OS choose every one. ('flowkit bench' \
            starts clusters of its own on ports the OS chooses, and its raw ZeroMQ baseline does too.)

            A node that crashes (killed by a signal, or a non-zero exit) is restarted, after 1 s, then 2, 4, … up to \
            30 s while it keeps failing, and the live view says so; one stopped cleanly (SIGTERM, exit code 0) is left stopped. \
            A coordinator that exits is not restarted (among replicated ones another leads); the live view says so. \
            To restart one node by hand, after stopping it (its pid is in cluster.json): cluster.json holds \
            each process's command line ("command"); run it in another shell. A process 'flowkit cluster' \
            starts carries FLOWKIT_PARENT_PID and stops when 'flowkit cluster' does; one started by hand \
            does not, so it runs until you stop it.
            """
    )

    @Option(help: "How many nodes.")
    var nodes = 3

    @Option(help: "How many coordinators: 1, or 3, 5 or 7 replicated ones that elect their leader in an etcd this command starts (data in <dir>/etcd.data).")
    var coordinators = 1

    @Option(help: "The cluster's data directory (logs, snapshots, cluster.json, process logs).")
    var dir = LocalClusterFile.defaultDirectory

    @Option(help: "The coordinator's submit port; publish and sync take the next two, nodes base+11… 0: ports the OS chooses.")
    var basePort = 7400

    @Flag(help: "Delete the data directory first, starting from an empty log.")
    var fresh = false

    @Flag(help: "Skip the demo workload.")
    var noDemo = false

    @Option(help: "Stop after this many seconds instead of waiting for Ctrl-C.")
    var duration: Double?

    @Option(help: "synced (default) or relaxed.")
    var durability = "synced"

    @Option(help: "The children's log level (their logs are in the data directory).")
    var childLogLevel = "notice"

    @Flag(help: "Encrypt and authenticate every socket with CURVE: keys are generated in <dir>/keys.")
    var curve = false

    @Option(help: "The largest event admitted, in bytes, by the coordinator and every node. Default 1048576 (1 MiB).")
    var maxEventBytes: Int?

    @Option(help: "Where to serve the web dashboard: host:port. Default 127.0.0.1 at base+80 (7480; any free port with --base-port 0).")
    var dashboard: String?

    @Flag(help: "Do not serve the web dashboard.")
    var noDashboard = false

    @Flag(help: "Serve the dashboard without its token (loopback only): any program of any user of this machine may then emit and cancel through it.")
    var noDashboardToken = false

    func validate() throws {
        guard (1...32).contains(nodes) else { throw ValidationError("--nodes must be 1 to 32") }
        if let dashboard, Dashboard.parse(listen: dashboard) == nil {
            throw ValidationError("--dashboard is host:port, e.g. 127.0.0.1:7480; got \(dashboard)")
        }
        if noDashboardToken, let host = dashboard.flatMap(Dashboard.parse(listen:))?.host, !Dashboard.isLoopback(host) {
            throw ValidationError("--no-dashboard-token serves on loopback only; --dashboard \(dashboard ?? "") is reachable from other machines")
        }
        guard [1, 3, 5, 7].contains(coordinators) else { throw ValidationError("--coordinators must be 1, 3, 5 or 7") }
        if coordinators > 1, !EtcdServer.isInstalled {
            throw ValidationError("--coordinators \(coordinators) needs etcd: apt-get install -y etcd-server etcd-client (scripts/install-deps --etcd does)")
        }
        guard ["synced", "relaxed"].contains(durability) else { throw ValidationError("--durability must be synced or relaxed") }
    }

    func run() async throws {
        let logger = {
            var logger = Logger(label: "flowkit.cluster")
            logger.logLevel = .warning
            return logger
        }()
        if fresh { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let supervisor = LocalCluster(
            directory: dir, basePort: basePort, childLogLevel: childLogLevel, durability: durability, coordinators: coordinators
        )
        do {
            if let maxEventBytes {
                let limit = ["--max-event-bytes", "\(maxEventBytes)"]
                await supervisor.setExtraArguments(coordinator: limit, node: limit)
            }
            if curve { try await supervisor.enableCurve(nodes: nodes) }
            let file = try await supervisor.start(nodes: nodes)
            let coordinatorList = file.coordinators.map { list in
                "coordinators " + list.map { "\($0.id ?? "") \($0.submit)" }.joined(separator: ", ") + " (etcd \(file.etcd ?? ""))"
            } ?? "coordinator \(file.coordinator.submit)"
            printFlushed("cluster up: \(coordinatorList), nodes " + file.nodes.map { "\($0.name) \($0.clientEndpoint)" }.joined(separator: ", "))
            printFlushed("data and logs in \(dir); try: flowkit emit counter/a '{\"increment\":{}}' --node node-2")
            if curve { printFlushed("CURVE on: keys in \(dir)/keys, allow-lists \(dir)/keys/authorized (everyone) and \(dir)/keys/nodes (the coordinators' submit sockets)") }
            let stop = StopFlag()
            let notes = SupervisorNotes()
            let supervision = await supervisor.superviseNodes(say: notes.say)
            defer { supervision.cancel() }
            let page = noDashboard ? nil : try await serveDashboard(file: file, supervisor: supervisor, logger: logger)
            defer { page?.cancel() }
            try await ShutdownService.run(logger: logger) {
                if !noDemo { try await DemoWorkload(file: file, logger: logger).run() }
                try await liveView(file: file, logger: logger, stop: stop, notes: notes)
            } stop: {
                stop.set()
            }
        } catch {
            await supervisor.stop()
            throw fail(error)
        }
        printFlushed("stopping the cluster")
        await supervisor.stop()
        printFlushed("stopped; no child process left")
    }

    /// Serves the web dashboard in the background, prints its URL (with its token) and writes it
    /// in cluster.json (where `flowkit bench --attach` finds it, and the token).
    private func serveDashboard(file: LocalClusterFile, supervisor: LocalCluster, logger: Logger) async throws -> Task<Void, any Error> {
        let address = dashboard.flatMap(Dashboard.parse(listen:)) ?? (host: "127.0.0.1", port: basePort == 0 ? 0 : basePort + 80)
        let (task, url, access) = try await Dashboard.start(for: file, host: address.host, port: address.port, token: !noDashboardToken, logger: logger)
        try await supervisor.setDashboard(access.baseURL, token: access.token)
        printFlushed("dashboard: \(url)" + (Dashboard.warning(host: address.host).map { " (\($0))" } ?? ""))
        return task
    }

    private func liveView(file: LocalClusterFile, logger: Logger, stop: StopFlag, notes: SupervisorNotes) async throws {
        var view = MonitorView()
        for node in file.nodes { view.nodeNames[node.id] = node.name }
        let deadline = duration.map { ContinuousClock.now.advanced(by: .milliseconds(Int($0 * 1_000))) }
        let (transport, serverKey) = try CurveClientOptions.resolve(localCluster: file) { $0.curve?.coordinatorPublicKey }
        try await LiveView.run(
            publishEndpoints: file.allCoordinators.map(\.publish),
            topics: [],
            transport: transport,
            serverKey: serverKey,
            view: view,
            title: "flowkit cluster — q or Ctrl-C stops",
            deadline: deadline,
            entryLinesPerSecond: 20,
            stop: stop,
            logger: logger,
            supervisor: notes
        )
    }
}
