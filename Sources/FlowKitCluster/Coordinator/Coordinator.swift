import FlowKitCore
import Logging
import Synchronization
import ZeroMQ

/// The process that puts every entry of the cluster in one order: it assigns seqs, makes entries
/// durable, acknowledges them to the nodes that submitted them and publishes them to everyone.
///
/// ```swift
/// let coordinator = Coordinator(configuration: configuration, registry: registry, logger: logger)
/// try await coordinator.run { endpoints in print("listening on \(endpoints.submit)") }
/// ```
///
/// `run` serves until ``shutdown()`` is called or its task is cancelled.
public final class Coordinator: Sendable {
    let configuration: CoordinatorConfiguration
    let registry: FlowRegistry
    let logger: Logger
    private let stop = StopSignal()

    /// The largest message the publish socket accepts from a subscriber: a subscription frame of
    /// the longest address, with room for CURVE's handshake commands.
    static let maxSubscriptionBytes: Int64 = 4_096

    public init(configuration: CoordinatorConfiguration, registry: FlowRegistry, logger: Logger) {
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
    }

    /// Binds the sockets, recovers the log and serves until shut down.
    ///
    /// - Parameter onReady: Called once the sockets are bound, with the endpoints (the ports the OS
    ///   chose included).
    public func run(onReady: @Sendable (CoordinatorEndpoints) -> Void = { _ in }) async throws {
        try configuration.limits.validate(against: configuration.transport)
        try configuration.replication?.validate()
        try await withIOLoop(name: "coordinator-io", linger: configuration.transport.linger, logger: logger) { loop in
            try await serve(loop: loop, onReady: onReady)
        }
    }

    /// Asks a running coordinator to stop; `run` returns once it has closed everything.
    public func shutdown() {
        stop.signal()
    }

    /// The three sockets, bound.
    struct Sockets: Sendable {
        var submit: AsyncSocket
        var publish: AsyncSocket
        var sync: AsyncSocket
        var endpoints: CoordinatorEndpoints
    }

    private func bind(on loop: IOLoop) async throws -> Sockets {
        let transport = configuration.transport
        if let curve = transport.curve, curve.allowedNodes == nil {
            throw CurveSecurityError(
                "a coordinator with CURVE needs the node keys that may say HELLO (CurveSecurity.allowedNodes, --curve-allow-nodes): its submit socket admits no other key"
            )
        }
        let socketConfiguration = AsyncSocket.Configuration(receiveBufferCapacity: 4_096, sendQueueCapacity: 65_536)
        // With CURVE, only node keys reach the submit socket: only a node may say HELLO.
        let (submit, submitEndpoint) = try await transport.openServer(
            .router, on: loop, configuration: socketConfiguration, binding: configuration.submitEndpoint, zapDomain: CurveSecurity.nodesDomain
        )
        // XPUB, so the coordinator learns which topics are wanted: instance runs are published only
        // while someone subscribes to an address prefix.
        let (publish, publishEndpoint) = try await transport.openServer(
            .xpub, on: loop, configuration: socketConfiguration, binding: configuration.publishEndpoint
        ) { [configuration] socket in
            // A publish socket only receives subscriptions, each one topic: an address at most. A
            // longer one would cost libzmq's subscription trie ~30 bytes of memory per byte of
            // topic, kept after the subscriber leaves, so its sender is disconnected instead.
            try socket.setOption(.maxMessageSize, Self.maxSubscriptionBytes)
            if let hwm = configuration.publishHighWaterMark { try socket.setOption(.sendHighWaterMark, hwm) }
            if let bytes = configuration.publishBufferBytes { try socket.setOption(.sendBufferBytes, bytes) }
        }
        let (sync, syncEndpoint) = try await transport.openServer(
            .router, on: loop, configuration: socketConfiguration, binding: configuration.syncEndpoint
        )
        return Sockets(
            submit: submit, publish: publish, sync: sync,
            endpoints: CoordinatorEndpoints(submit: submitEndpoint, publish: publishEndpoint, sync: syncEndpoint)
        )
    }

    private func serve(loop: IOLoop, onReady: @Sendable (CoordinatorEndpoints) -> Void) async throws {
        let transport = configuration.transport
        let authentication = try await transport.startAuthentication(on: loop, logger: logger)
        let sockets = try await bind(on: loop)
        if let replication = configuration.replication {
            try await serveReplicated(replication, sockets: sockets, loop: loop, registry: registry, stop: stop, onReady: onReady)
            await authentication?.stop()
            return
        }
        let (submit, publish, sync) = (sockets.submit, sockets.publish, sockets.sync)
        let (submitEndpoint, publishEndpoint, syncEndpoint) = (sockets.endpoints.submit, sockets.endpoints.publish, sockets.endpoints.sync)

        let storage = try CoordinatorStorage.open(configuration, logger: logger)
        let writer = LogWriter(log: storage.log)
        let (firstSeq, lastSeq) = try await writer.run { log in (log.firstSeq, log.lastSeq) }
        let epoch = storage.epoch
        var sequencer = Sequencer(
            epoch: epoch,
            durableHead: lastSeq,
            dedup: DedupTable(window: configuration.dedupWindow)
        )
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: logger)
        let quarantine = EntryQuarantine(frameLimit: transport.maxMessageBytes)
        let (replayed, quarantined) = try await storage.recover(into: replica, sequencer: &sequencer, quarantine: quarantine, logger: logger)
        if lastSeq > 0 {
            logger.info(
                "recovered the log",
                metadata: ["flowkit.first": "\(firstSeq)", "flowkit.last": "\(lastSeq)", "flowkit.replayed": "\(replayed)"]
            )
        }
        let machine = CoordinatorMachine(
            configuration: configuration,
            registry: registry,
            sequencer: sequencer,
            firstSeq: firstSeq,
            now: WallClock.micros()
        )
        let core = CoordinatorCore(
            machine: machine, logger: logger, counters: ClusterCounters(), writer: writer, submitSocket: submit, publishSocket: publish, replica: replica
        )
        await core.noteQuarantined(quarantined)
        // The ordering path runs on the I/O loop's thread, commits included (the sync blocks the
        // loop while submissions gather in the socket for the next group): each batch the submit
        // socket reads enters the core in the same loop turn, and leaves as ENTRIES with no thread
        // hop.
        try await submit.handleReceived { batch in core.assumeIsolated { _ = $0.handleSubmitBatch(batch) } }
        try await publish.handleReceived { batch in core.assumeIsolated { $0.noteSubscriptions(batch) } }
        let syncServer = SyncServer(
            socket: sync,
            writer: writer,
            source: core,
            counters: core.counters,
            quarantine: quarantine,
            maxRangeCount: configuration.maxRangeCount,
            logger: logger
        )
        let endpoints = CoordinatorEndpoints(submit: submitEndpoint, publish: publishEndpoint, sync: syncEndpoint)
        logger.info(
            "coordinator ready",
            metadata: [
                "flowkit.epoch": "\(epoch)", "flowkit.head": "\(lastSeq)",
                "flowkit.submit": "\(submitEndpoint)", "flowkit.publish": "\(publishEndpoint)", "flowkit.sync": "\(syncEndpoint)",
            ]
        )
        onReady(endpoints)

        await withDiscardingTaskGroup { group in
            group.addTask { await replica.run() }
            group.addTask { await core.receiveReports() }
            group.addTask { await syncServer.run() }
            // Timed by the loop, on its thread: a heartbeat costs the idle coordinator one
            // wake-up, not a pool thread's and then the loop's.
            group.addTask(executorPreference: loop) { [configuration] in
                await every(configuration.heartbeatInterval, on: loop) { await core.heartbeat() }
            }
            group.addTask(executorPreference: loop) { [configuration] in
                await every(configuration.statusInterval, on: loop) { await core.publishStatus() }
            }
            if let snapshots = storage.snapshots {
                let compactor = Compactor(
                    replica: replica, writer: writer, snapshots: snapshots, core: core,
                    every: configuration.snapshotEvery, retain: configuration.retainEntries, logger: logger
                )
                group.addTask { await every(.seconds(1)) { await compactor.compactIfDue() } }
            }
            await stop.wait()
            logger.info("coordinator stopping")
            group.cancelAll()
            await replica.finish()
            for socket in [submit, publish, sync] { await socket.close(linger: transport.linger) }
        }
        try? await writer.run { log in (log as? DurableEntryLog)?.close() }
        await authentication?.stop()
    }
}
