import ArgumentParser
@_spi(Wire) import FlowKitCluster
import Foundation
import UnixSignals

/// `flowkit node`: runs a node that hosts flow instances.
struct NodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "node",
        abstract: "Run a node: it hosts flow instances, takes emits from clients and runs their effects.",
        discussion: """
            Prints one line 'READY {"client":…,"id":…}' on standard output once clients can connect; \
            logs go to standard error. SIGTERM or SIGINT shut it down gracefully. Settings come from \
            flags, then $FLOWKIT_NODE_*, then the config file's "node" section.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var curve: CurveServerOptions
    @OptionGroup var tracing: TraceOptions

    @Option(help: "With CURVE: the coordinator's public key (a .pub file or Z85 text).")
    var coordinatorKey: String?

    @Option(help: "Serve Prometheus metrics at http://<host:port>/metrics (port 0: one the OS chooses).")
    var metrics: String?
    @OptionGroup var target: CoordinatorTargetOptions

    @Option(help: "The node's id: unique in the cluster, 1 or more; 'auto' derives one from the host name (for replicas of a Deployment).")
    var id: String?

    @Option(help: "The node's name in logs and status. Default node-<id>.")
    var name: String?

    @Option(help: "Where clients connect (ROUTER). Default tcp://127.0.0.1:* (a port the OS chooses).")
    var client: String?

    @Option(help: "The client endpoint to tell others, when the bound one (0.0.0.0) is not reachable as is.")
    var advertise: String?

    @Option(help: "Where the node keeps local snapshots, to resume from after a restart.")
    var dataDir: String?

    @Option(help: "Milliseconds between local snapshots (with --data-dir), at least; each holds the instances changed since the last, or every one when those outgrow half the last that did. Default 10000.")
    var snapshotMs: Int?

    @Option(help: "Milliseconds an instance stays unchanged before it rests as a compact record until its next use (0: never). Default 60000.")
    var restAfterMs: Int?

    @Option(help: "Messages the subscription queues before the node stops reading it (then the kernel's buffers and the coordinator's --publish-hwm queue, and past that the coordinator drops entries for this node, which repairs the gap from the log). Default 100000.")
    var subscriberHwm: Int?

    @Option(help: "The subscription's kernel receive buffer (SO_RCVBUF) in bytes. Default: the OS sizes it.")
    var subscriberBufferBytes: Int?

    @Option(help: "The largest event a client or effect may submit, in bytes. Default 1048576 (1 MiB); set the coordinator's the same.")
    var maxEventBytes: Int?

    func run() async throws {
        let settings = try common.settings()
        let logger = try common.makeLogger(label: "flowkit.node", settings: settings)
        let metricsServer = try settings.string("node", "metrics", flag: metrics).map { try MetricsServer.start(address: $0, logger: logger) }
        let metricsEndpoint = metricsServer?.endpoint ?? ""
        guard let idText = settings.string("node", "id", flag: id) else {
            throw ValidationError("a node needs --id (1 or more, or auto), unique in its cluster")
        }
        let id: Int
        if idText == "auto" {
            id = Int(Self.automaticID(hostName: ProcessInfo.processInfo.hostName))
        } else {
            guard let number = Int(idText), number >= 1, number <= Int(UInt32.max) else {
                throw ValidationError("--id must be a number from 1 to \(UInt32.max), or auto; got \(idText)")
            }
            id = number
        }
        let endpoints = try target.endpoints(settings: settings, section: "node")
        var configuration = NodeConfiguration(
            id: UInt32(id),
            coordinator: endpoints,
            name: settings.string("node", "name", flag: name)
        )
        configuration.otherCoordinators = try target.others(settings: settings, section: "node")
        configuration.clientEndpoint = settings.string("node", "client", flag: client) ?? configuration.clientEndpoint
        configuration.dataDirectory = settings.string("node", "data-dir", flag: dataDir)
        configuration.advertisedEndpoint = settings.string("node", "advertise", flag: advertise)
        if let hwm = try settings.int("node", "subscriber-hwm", flag: subscriberHwm) {
            guard (0...Int(Int32.max)).contains(hwm) else { throw ValidationError("--subscriber-hwm must be 0 (no limit) or more; got \(hwm)") }
            configuration.subscriberHighWaterMark = Int32(hwm)
        }
        if let bytes = try settings.int("node", "subscriber-buffer-bytes", flag: subscriberBufferBytes) {
            guard (1...Int(Int32.max)).contains(bytes) else { throw ValidationError("--subscriber-buffer-bytes must be 1 or more; got \(bytes)") }
            configuration.subscriberBufferBytes = Int32(bytes)
        }
        if let bytes = try settings.int("node", "max-event-bytes", flag: maxEventBytes) {
            configuration.limits.maxEventBytes = bytes
        }
        if let interval = try settings.milliseconds("node", "snapshot-ms", flag: snapshotMs) {
            configuration.snapshotInterval = interval
        }
        if let after = try settings.int("node", "rest-after-ms", flag: restAfterMs) {
            guard after >= 0 else { throw ValidationError("--rest-after-ms must be 0 (never) or more; got \(after)") }
            configuration.restAfter = after == 0 ? nil : .milliseconds(after)
        }
        configuration.transport.curve = try curve.security(settings: settings, section: "node")
        configuration.transport.engine = try common.engine(settings: settings)
        configuration.trace = tracing.trace(name: configuration.name)
        if configuration.transport.curve != nil {
            guard let key = settings.string("node", "coordinator-key", flag: coordinatorKey) else {
                throw ValidationError("with CURVE a node needs --coordinator-key, the coordinator's public key")
            }
            configuration.coordinatorPublicKey = try CurveSecurity.publicKey(key)
        }
        let node = Node(configuration: configuration, registry: FlowKitCLI.registry, logger: logger)
        let nodeName = configuration.name
        do {
            // SIGUSR1 drops the node's connections to the coordinator (fault injection).
            let faults = Task {
                for await _ in await UnixSignalsSequence(trapping: .sigusr1) { await node.dropConnections() }
            }
            defer { faults.cancel() }
            try await ShutdownService.run(logger: logger) {
                try await node.run { endpoint in
                    printFlushed("READY " + jsonLine(["client": endpoint, "id": "\(id)", "name": nodeName, "metrics": metricsEndpoint, "allocator": processAllocator]))
                }
            } stop: {
                node.shutdown()
            }
        } catch {
            throw fail(error)
        }
    }

    /// A node id from a host name: FNV-1a, 31 bits, never 0. Pods of a Deployment get distinct
    /// names, so distinct ids (a collision among a handful of nodes is vanishingly unlikely).
    static func automaticID(hostName: String) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        for byte in hostName.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return (hash & 0x7FFF_FFFF) | 1
    }
}
