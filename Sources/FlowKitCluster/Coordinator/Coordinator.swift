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
    /// Why it stopped of its own accord, if it did (``fail(_:)``).
    private let failure = Mutex<String?>(nil)

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
        let linger = configuration.transport.linger
        try await withIOLoop(name: "coordinator-io", linger: linger, logger: logger) { loop in
            // Replicated, the sync socket (and a standby's DEALER to the leader's) has a thread of
            // its own: the ordering loop blocks in each commit's sync, and a FETCHED waiting for it
            // made every replicated commit wait a sync more. Alone, the sync socket serves nodes'
            // repairs and snapshots, which wait for nothing so short.
            guard configuration.replication != nil else {
                return try await serve(loop: loop, syncLoop: loop, onReady: onReady)
            }
            let syncLoop = try IOLoop(context: loop.context, name: "coordinator-sync", logger: logger)
            do {
                try await serve(loop: loop, syncLoop: syncLoop, onReady: onReady)
            } catch {
                await syncLoop.shutdown(linger: linger)
                throw error
            }
            await syncLoop.shutdown(linger: linger)
        }
    }

    /// Asks a running coordinator to stop; `run` returns once it has closed everything.
    public func shutdown() {
        stop.signal()
    }

    /// Stops the coordinator because it must not go on (a replicated leader whose log could not
    /// sync what its standbys may hold): `run` throws `reason` once it has closed everything.
    func fail(_ reason: String) {
        logger.critical("the coordinator stops: \(reason)")
        failure.withLock { $0 = $0 ?? reason }
        stop.signal()
    }

    /// Binds the sockets, opens the storage and the replica at its snapshot, and serves: a
    /// coordinator alone leads at once, in the next epoch its storage counts; one of a replicated
    /// group copies the leader's log until the election makes it the leader. Both lead the same
    /// way (``lead(_:in:group:deposed:)``).
    private func serve(loop: IOLoop, syncLoop: IOLoop, onReady: @Sendable (CoordinatorEndpoints) -> Void) async throws {
        let transport = configuration.transport
        let authentication = try await transport.startAuthentication(on: loop, logger: logger)
        let sockets = try await bind(on: loop, syncLoop: syncLoop)
        let storage = try CoordinatorStorage.open(configuration, logger: logger)
        let parts = CoordinatorParts(
            sockets: sockets, writer: LogWriter(log: storage.log),
            // Only the snapshot now: the log is read when this coordinator leads, and a replicated
            // one's log may end with entries that are not committed (and may yet be cut).
            replica: CoordinatorReplica(
                registry: registry, applied: 0, dedupWindow: configuration.dedupWindow, restAfter: configuration.restAfter, logger: logger
            ),
            quarantine: EntryQuarantine(frameLimit: transport.maxMessageBytes),
            counters: ClusterCounters()
        )
        let afterSnapshot = try await storage.restoreSnapshot(into: parts.replica, logger: logger)
        var group: ReplicatedGroup?
        if let replication = configuration.replication {
            try storage.refuseUnreadable(from: afterSnapshot, versions: ReadableVersions(registry))
            group = try await ReplicatedGroup.join(replication, parts: parts, snapshots: storage.snapshots, configuration: configuration, logger: logger)
        }
        let role = CoordinatorRole(replica: parts.replica, standby: group?.standby)
        if group == nil {
            // Alone, it leads before it says it is ready: there is no one else to answer.
            let record = LeaderRecord(id: "coordinator", epoch: storage.epoch, endpoints: sockets.endpoints)
            let core = try await lead(record, in: parts, group: nil)
            // A log this build cannot read all of: refuse to start, rather than order after an
            // entry its replica cannot apply (docs/VERSIONING.md, guarantee 2).
            if let unreadable = await parts.replica.unreadable {
                throw ProtocolError(.versionUnreadable, "this coordinator's build cannot read its log, so it does not start: \(unreadable)")
            }
            role.lead(core, record: record)
        }
        // The ordering path runs on the I/O loop's thread, commits included (the sync blocks the
        // loop while submissions gather in the socket for the next group). Alone, each batch the
        // submit socket reads enters the core in the same loop turn, and leaves as ENTRIES with no
        // thread hop; replicated, a task on the loop reads them (below).
        if group == nil {
            try await sockets.submit.handleReceived { batch in role.order(batch, redirectingOn: sockets.submit) }
        }
        try await sockets.publish.handleReceived { batch in role.core?.assumeIsolated { $0.noteSubscriptions(batch) } }
        // A joining node is served the Compactor's newest snapshot while its tail is short enough.
        let compactor = storage.snapshots.map { snapshots in
            Compactor(
                replica: parts.replica, writer: parts.writer, snapshots: snapshots,
                every: configuration.snapshotEvery, retain: configuration.retainEntries, logger: logger
            )
        }
        let saved = storage.snapshots.map {
            SavedSnapshots(store: $0, maxReplay: configuration.snapshotEvery + configuration.retainEntries, compactor: compactor)
        }
        var mayAct: (@Sendable () -> Bool)?
        if let election = group?.election { mayAct = { election.mayLead() } }
        let syncServer = SyncServer(
            socket: sockets.sync, writer: parts.writer, source: role, counters: parts.counters, quarantine: parts.quarantine,
            maxRangeCount: configuration.maxRangeCount, logger: logger, snapshots: SnapshotEncoding(replica: parts.replica, saved: saved),
            written: group?.written, feed: group?.feed, reported: group?.reported, trace: configuration.trace,
            mayAct: mayAct
        )
        var ready: Logger.Metadata = [
            "flowkit.submit": "\(sockets.endpoints.submit)", "flowkit.publish": "\(sockets.endpoints.publish)", "flowkit.sync": "\(sockets.endpoints.sync)",
        ]
        if let replication = configuration.replication {
            ready["flowkit.id"] = "\(replication.id)"
            ready["flowkit.etcd"] = "\(replication.etcdEndpoints.joined(separator: ","))"
        } else {
            ready["flowkit.epoch"] = "\(storage.epoch)"
        }
        logger.info("coordinator ready", metadata: ready)
        onReady(sockets.endpoints)

        await withDiscardingTaskGroup { tasks in
            if let group {
                group.run(in: &tasks, role: role, logger: logger) { record in
                    try await self.lead(record, in: parts, group: group, deposed: role.lastLeader?.id)
                }
            }
            if group != nil {
                // A group commits once the standbys have fetched it: batches read by a task's turn
                // make fewer, larger groups than the handler's reads (3 coordinators at 10,000/s:
                // p50 3.1 ms against 3.8). While this coordinator does not lead, SUBMITs and HELLOs
                // are answered NOT_LEADER.
                tasks.addTask(executorPreference: loop) {
                    while let batch = try? await sockets.submit.receiveBatch(max: 1_024) {
                        if let core = role.core, await core.handleSubmitBatch(batch) { continue }
                        role.redirect(batch, on: sockets.submit)
                    }
                }
            }
            tasks.addTask { await parts.replica.run() }
            // Replicated, on the sync socket's own thread: a held FETCH is answered there the
            // moment the ordering loop says a group is durable, with no pool thread between.
            tasks.addTask(executorPreference: group == nil ? nil : syncLoop) { await syncServer.run() }
            // Timed by the loop, on its thread: a heartbeat costs the idle coordinator one
            // wake-up, not a pool thread's and then the loop's.
            tasks.addTask(executorPreference: loop) { [configuration] in
                await every(configuration.heartbeatInterval, on: loop) {
                    guard let core = role.core else { return }
                    await core.heartbeat()
                    await core.tickReplication()
                    await core.publishStatusIfOwnerLapsed()
                }
            }
            tasks.addTask(executorPreference: loop) { [configuration] in
                await every(configuration.statusInterval, on: loop) { await role.core?.publishStatus() }
            }
            if let compactor {
                tasks.addTask {
                    await every(.seconds(1)) {
                        await compactor.compactIfDue { first in await role.core?.noteCompacted(firstSeq: first) }
                    }
                }
            }
            await stop.wait()
            logger.info("coordinator stopping")
            tasks.cancelAll()
            role.stop()
            await parts.replica.finish()
            for socket in [sockets.submit, sockets.publish, sockets.sync] + (group.map { [$0.fetches] } ?? []) {
                await socket.close(linger: transport.linger)
            }
        }
        try? await parts.writer.run { log in (log as? DurableEntryLog)?.close() }
        await authentication?.stop()
        if let reason = failure.withLock({ $0 }) { throw ProtocolError(.internalError, reason) }
    }
}

/// What a coordinator process holds through every change of role.
struct CoordinatorParts: Sendable {
    let sockets: Coordinator.Sockets
    /// The log, confined to the ordering thread.
    let writer: LogWriter
    let replica: CoordinatorReplica
    /// Entries no message can carry are applied and served as their stand-ins.
    let quarantine: EntryQuarantine
    /// One set for every core this process runs, so counts go on across terms.
    let counters: ClusterCounters
}
