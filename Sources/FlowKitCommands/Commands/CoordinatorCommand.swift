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

    @Option(help: "With CURVE: the nodes' public keys (one per line), the only keys the submit socket admits, so only a node may say HELLO. Required with --curve-secret.")
    var curveAllowNodes: String?

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

    @Option(help: "With --data-dir: save a snapshot every this many entries, then drop the log segments wholly below the snapshot less --retain-entries. Default 100000.")
    var snapshotEvery: Int?

    @Option(help: "With --data-dir: entries kept in the log behind the latest snapshot, for nodes and standbys to repair from. Default 100000.")
    var retainEntries: Int?

    @Option(help: "With --data-dir: the size at which a log segment is closed and the next begins (compaction drops whole segments). Default 67108864 (64 MiB).")
    var segmentBytes: Int?

    @Option(help: "Milliseconds between heartbeats. Default 100.")
    var heartbeatMs: Int?

    @Option(help: "The largest event admitted, in bytes. Default 1048576 (1 MiB); at most the 64 MiB frame limit less 312.")
    var maxEventBytes: Int?

    @Option(help: "Milliseconds a live node may apply nothing while behind the head before it counts as stalled (an alarm). Default 5000.")
    var stallMs: Int?

    @Option(help: "Milliseconds an instance stays unchanged before it rests as a compact record until its next use (0: never). Default 60000.")
    var restAfterMs: Int?

    @Option(help: "Messages queued for one slow subscriber before its entries are dropped (it repairs the gap from the log). Default 100000.")
    var publishHwm: Int?

    @Option(help: "The kernel send buffer (SO_SNDBUF) of each subscriber's connection, in bytes. Default: the OS sizes it.")
    var publishBufferBytes: Int?

    @Option(help: "Replicated coordinators: this one's id, one of --coordinators'.")
    var id: String?

    @Option(help: "Replicated coordinators: every one, this one included, as id=tcp://host:submit-port, comma-separated (publish and sync on the next two ports of each).")
    var coordinators: String?

    @Option(help: "Replicated coordinators: etcd's client URLs, comma-separated (http://127.0.0.1:2379), where they elect their leader.")
    var etcd: String?

    @Option(help: "Replicated coordinators: the prefix of this cluster's keys in etcd. Default /flowkit/cluster.")
    var etcdPrefix: String?

    @Option(help: "Replicated coordinators: seconds the leader's lease lives unrenewed, so how long a dead leader holds its seat (at least 2, etcd's minimum). Default 2.")
    var leaseSeconds: Int?

    @Option(help: "Replicated coordinators: milliseconds a standby may stay behind the leader's log before it leaves the in-sync set. Default 1000.")
    var lagTimeoutMs: Int?

    @Option(help: "Replicated coordinators: the fewest in-sync coordinators, the leader included, for anything to commit. Default 2.")
    var minInSync: Int?

    /// The replication settings: all of --id, --coordinators and --etcd, or none.
    func replication(settings: Settings) throws -> CoordinatorReplication? {
        let id = settings.string("coordinator", "id", flag: id)
        let list = settings.string("coordinator", "coordinators", flag: coordinators)
        let etcd = settings.string("coordinator", "etcd", flag: etcd)
        guard id != nil || list != nil || etcd != nil else { return nil }
        guard let id, let list, let etcd else {
            throw ValidationError("replicated coordinators need --id, --coordinators and --etcd together")
        }
        var coordinators: [String: CoordinatorEndpoints] = [:]
        for item in list.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ValidationError("--coordinators takes id=tcp://host:port items, comma-separated; got \(item)")
            }
            let (publish, sync) = try CoordinatorTargetOptions.neighbours(of: parts[1])
            coordinators[parts[0]] = CoordinatorEndpoints(submit: parts[1], publish: publish, sync: sync)
        }
        var replication = CoordinatorReplication(id: id, coordinators: coordinators, etcdEndpoints: etcd.split(separator: ",").map(String.init))
        if let prefix = settings.string("coordinator", "etcd-prefix", flag: etcdPrefix) { replication.etcdPrefix = prefix }
        if let seconds = try settings.int("coordinator", "lease-seconds", flag: leaseSeconds) { replication.leaseSeconds = Int64(seconds) }
        if let timeout = try settings.milliseconds("coordinator", "lag-timeout-ms", flag: lagTimeoutMs) { replication.lagTimeout = timeout }
        if let count = try settings.int("coordinator", "min-in-sync", flag: minInSync) { replication.minInSync = count }
        return replication
    }

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
        if let every = try settings.int("coordinator", "snapshot-every", flag: snapshotEvery) {
            guard every >= 1 else { throw ValidationError("--snapshot-every must be 1 or more; got \(every)") }
            configuration.snapshotEvery = UInt64(every)
        }
        if let retain = try settings.int("coordinator", "retain-entries", flag: retainEntries) {
            guard retain >= 0 else { throw ValidationError("--retain-entries must be 0 or more; got \(retain)") }
            configuration.retainEntries = UInt64(retain)
        }
        if let bytes = try settings.int("coordinator", "segment-bytes", flag: segmentBytes) {
            guard bytes >= 4_096 else { throw ValidationError("--segment-bytes must be 4096 or more; got \(bytes)") }
            configuration.segmentBytes = bytes
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
        if let after = try settings.int("coordinator", "rest-after-ms", flag: restAfterMs) {
            guard after >= 0 else { throw ValidationError("--rest-after-ms must be 0 (never) or more; got \(after)") }
            configuration.restAfter = after == 0 ? nil : .milliseconds(after)
        }
        if let hwm = try settings.int("coordinator", "publish-hwm", flag: publishHwm) {
            guard (0...Int(Int32.max)).contains(hwm) else { throw ValidationError("--publish-hwm must be 0 (no limit) or more; got \(hwm)") }
            configuration.publishHighWaterMark = Int32(hwm)
        }
        if let bytes = try settings.int("coordinator", "publish-buffer-bytes", flag: publishBufferBytes) {
            guard (1...Int(Int32.max)).contains(bytes) else { throw ValidationError("--publish-buffer-bytes must be 1 or more; got \(bytes)") }
            configuration.publishBufferBytes = Int32(bytes)
        }
        configuration.replication = try replication(settings: settings)
        if let own = configuration.replication.flatMap({ $0.coordinators[$0.id] }), submit == nil, publish == nil, sync == nil {
            // Its own endpoints are the ones the others know it by.
            (configuration.submitEndpoint, configuration.publishEndpoint, configuration.syncEndpoint) = (own.submit, own.publish, own.sync)
        }
        configuration.transport.curve = try curve.security(settings: settings, section: "coordinator", allowNodes: .some(curveAllowNodes))
        configuration.transport.engine = try common.engine(settings: settings)
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
