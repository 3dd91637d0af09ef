import ArgumentParser
@_spi(Wire) import FlowKitCluster
import Foundation

/// `flowkit coordinator`: runs the process that orders, stores and publishes every entry.
struct CoordinatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinator",
        abstract: "Run a coordinator: it orders every entry, makes it durable and publishes it.",
        discussion: """
            Prints one line 'READY {"submit":…,"publish":…,"sync":…}' on standard output once its \
            sockets are bound (ports chosen by the OS for :* included); logs go to standard error. \
            SIGTERM or SIGINT shut it down gracefully. Settings come from flags, then $FLOWKIT_COORDINATOR_*, \
            then the config file's "coordinator" section.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var curve: CurveServerOptions
    @OptionGroup var tracing: TraceOptions

    @Option(help: "Serve Prometheus metrics at http://<host:port>/metrics (port 0: one the OS chooses).")
    var metrics: String?

    @Option(help: "Where nodes submit (ROUTER). Default tcp://127.0.0.1:7400.")
    var submit: String?

    @Option(help: "Where entries are published (PUB). Default: the port after --submit's.")
    var publish: String?

    @Option(help: "Where ranges and snapshots are served (ROUTER). Default: two ports after --submit's.")
    var sync: String?

    @Option(help: "The log's directory. Without one the log is kept in memory.")
    var dataDir: String?

    @Option(help: "synced (fdatasync every group commit, the default) or relaxed (survives a process crash, not power loss).")
    var durability: String?

    @Option(help: "Milliseconds between heartbeats. Default 100.")
    var heartbeatMs: Int?

    @Option(help: "The largest event admitted, in bytes. Default 1048576 (1 MiB); at most the 64 MiB frame limit less 312.")
    var maxEventBytes: Int?

    @Option(help: "Milliseconds a live node may apply nothing while behind the head before it counts as stalled (an alarm). Default 5000.")
    var stallMs: Int?

    func run() async throws {
        let settings = try common.settings()
        let logger = try common.makeLogger(label: "flowkit.coordinator", settings: settings)
        let metricsServer = try settings.string("coordinator", "metrics", flag: metrics).map { try MetricsServer.start(address: $0, logger: logger) }
        let metricsEndpoint = metricsServer?.endpoint ?? ""
        var configuration = CoordinatorConfiguration()
        configuration.submitEndpoint = settings.string("coordinator", "submit", flag: submit) ?? configuration.submitEndpoint
        // Publish and sync follow submit on the next two ports unless given: the convention nodes
        // use with --coordinator.
        let neighbours = try? CoordinatorTargetOptions.neighbours(of: configuration.submitEndpoint)
        configuration.publishEndpoint = settings.string("coordinator", "publish", flag: publish)
            ?? neighbours?.publish ?? configuration.publishEndpoint
        configuration.syncEndpoint = settings.string("coordinator", "sync", flag: sync)
            ?? neighbours?.sync ?? configuration.syncEndpoint
        configuration.dataDirectory = settings.string("coordinator", "data-dir", flag: dataDir)
        if let text = settings.string("coordinator", "durability", flag: durability) {
            guard let mode = CoordinatorConfiguration.Durability(rawValue: text) else {
                throw ValidationError("--durability must be synced or relaxed; got \(text)")
            }
            configuration.durability = mode
        }
        if let interval = try settings.milliseconds("coordinator", "heartbeat-ms", flag: heartbeatMs) {
            configuration.heartbeatInterval = interval
        }
        if let bytes = try settings.int("coordinator", "max-event-bytes", flag: maxEventBytes) {
            configuration.limits.maxEventBytes = bytes
        }
        if let timeout = try settings.milliseconds("coordinator", "stall-ms", flag: stallMs) {
            configuration.stallTimeout = timeout
        }
        configuration.transport.curve = try curve.security(settings: settings, section: "coordinator")
        configuration.trace = tracing.trace(name: "coordinator")
        let coordinator = Coordinator(configuration: configuration, registry: FlowKitCLI.registry, logger: logger)
        do {
            try await ShutdownService.run(logger: logger) {
                try await coordinator.run { endpoints in
                    printFlushed(
                        "READY " + jsonLine([
                            "submit": endpoints.submit, "publish": endpoints.publish, "sync": endpoints.sync,
                            "metrics": metricsEndpoint, "allocator": processAllocator,
                        ])
                    )
                }
            } stop: {
                coordinator.shutdown()
            }
        } catch {
            throw fail(error)
        }
    }
}
