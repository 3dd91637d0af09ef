import FlowKitLog
import Logging
import ZeroMQ

/// Carries out a standby coordinator's ``StandbyCopy`` over a DEALER socket to the leader's
/// sync socket, the local log and the coordinator's replica.
///
/// The copy's appends and cuts go through the ``LogWriter`` like the leader's commits; what the
/// leader committed is read back from the local log and applied to the replica in order, so the
/// replica (its snapshots, its digests) never holds an entry that might still be cut.
actor CoordinatorStandby {
    private var copy: StandbyCopy
    private let writer: LogWriter
    private let socket: AsyncSocket
    private let replica: CoordinatorReplica
    /// Entries no message can carry are applied as their stand-ins, as every node applies them.
    private let quarantine: EntryQuarantine
    /// Where a snapshot installed from the leader is saved (`nil`: a log kept in memory).
    private let snapshots: SnapshotStore?
    /// Notes when sampled entries arrive and become durable here (`flowkit bench --trace`).
    private let trace: HopTrace?
    private var traceFlushedAt: UInt64 = 0
    private let logger: Logger
    /// The leader's sync endpoint the socket is connected to.
    private var connected: String?
    /// The wire protocol the leader speaks: this process's newest until it refuses that in an
    /// older one; then that one, until another leader (docs/VERSIONING.md).
    private var leaderProtocol = WireHeader.spoken.upperBound
    private var followedEpoch: UInt32?
    /// The last seq applied to the replica.
    private(set) var applied: UInt64
    /// How far committed entries are to be applied, and whether a pass is applying them.
    private var applyTarget: UInt64 = 0
    private var isApplying = false
    /// The copy's write in flight, if any.
    private var inFlight: Task<Void, Never>?
    /// The DEALER's loop thread: answers are read, and the next FETCH sent, with no thread between.
    nonisolated let unownedExecutor: UnownedSerialExecutor

    init(
        copy: StandbyCopy, writer: LogWriter, socket: AsyncSocket, replica: CoordinatorReplica, quarantine: EntryQuarantine, applied: UInt64,
        snapshots: SnapshotStore? = nil, trace: HopTrace? = nil, logger: Logger
    ) {
        self.copy = copy
        self.snapshots = snapshots
        self.quarantine = quarantine
        self.trace = trace
        self.writer = writer
        self.socket = socket
        self.unownedExecutor = socket.loop.serialExecutor.asUnownedSerialExecutor()
        self.replica = replica
        self.applied = applied
        self.logger = logger
    }

    /// How far the copy is committed: what this coordinator may serve.
    var committed: UInt64 { copy.committed }
    var durable: UInt64 { copy.durable }

    /// The last seq the log holds and the epoch that ordered it.
    static func logEnd(_ writer: LogWriter) async throws -> (seq: UInt64, epoch: UInt32) {
        try await writer.run { log in try log.end() }
    }

    /// This coordinator stopped leading, its log written up to some end and committed up to
    /// `committed`: the copy continues from there.
    func resumeAfterLeading(committed: UInt64) async {
        do {
            let end = try await Self.logEnd(writer)
            copy.resume(durable: end.seq, lastEpoch: end.epoch, committed: committed)
        } catch {
            logger.error("could not read the log's end after leading", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Follows `leader` (nil: none known): reconnects the socket and fetches from it.
    func follow(_ leader: LeaderRecord?) async {
        let endpoint = leader?.endpoints.sync
        if endpoint != connected {
            let (old, new) = (connected, endpoint)
            do {
                try await socket.configure { socket in
                    if let old { try socket.disconnect(old) }
                    if let new { try socket.connect(new) }
                }
            } catch {
                logger.warning("could not follow the leader's sync endpoint", metadata: ["flowkit.error": "\(error)"])
            }
            connected = endpoint
        }
        if leader?.epoch != followedEpoch {
            followedEpoch = leader?.epoch
            leaderProtocol = WireHeader.spoken.upperBound
        }
        await carryOut(copy.follow(leader, now: WallClock.micros()))
        // About to lead, maybe: the log is the leader's from here, so the copy's last write lands first.
        if leader == nil {
            while let write = inFlight {
                inFlight = nil
                await write.value
            }
        }
    }

    /// Reads the leader's answers until the socket closes.
    nonisolated func receive() async {
        while let message = try? await socket.receive() {
            await handle(message.frames.map(\.bytes))
        }
    }

    func tick() async {
        let now = WallClock.micros()
        if let trace, now >= traceFlushedAt + 1_000_000 {
            trace.flush()
            traceFlushedAt = now
        }
        await carryOut(copy.tick(now: now))
    }

    private func handle(_ frames: [[UInt8]]) async {
        do {
            let type = try WireHeader.read(frames.first ?? [], expecting: .fetched, .error, .snapshotChunk, .range).0
            let now = WallClock.micros()
            switch type {
            case .error:
                let error = try ErrorReply(frames: frames)
                if let older = error.olderProtocol(than: leaderProtocol) {
                    leaderProtocol = older
                    logger.notice("the leader speaks an older wire protocol; speaking it to the leader", metadata: ["flowkit.protocol": "\(older)"])
                } else if error.error.code == .notFound, !copy.isInstalling {
                    logger.notice("behind the leader's retained log; installing its snapshot", metadata: ["flowkit.error": "\(error.error.message)"])
                } else {
                    // Expected for a moment around a change of leader: the new one may not know yet.
                    let level: Logger.Level = error.error.code == .coordinatorUnavailable ? .info : .warning
                    logger.log(level: level, "the leader refused a request; asking again shortly", metadata: ["flowkit.error": "\(error.error)"])
                }
                await carryOut(copy.refused(error, now: now))
            case .snapshotChunk:
                await carryOut(copy.received(try SnapshotChunkMessage(frames: frames), now: now))
            case .range:
                await carryOut(copy.received(try RangeMessage(frames: frames), now: now))
            default:
                let fetched = try FetchedMessage(frames: frames)
                trace?.note(records: fetched.records, .standbyReceived, at: now)
                await carryOut(try copy.received(fetched, now: now))
            }
        } catch {
            logger.warning("an answer from the leader could not be used; asking again", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Carries out the copy's actions. An append is written and synced here, on the sync
    /// sockets' thread, as the leader's ordering thread syncs its own groups: the FETCH that asks
    /// for more went out before it, what arrives meanwhile waits in the socket and is the next
    /// group, and the report follows the sync with no thread between. A cut and an install run in
    /// a task of their own; the copy has one write in flight at most.
    private func carryOut(_ actions: [StandbyCopy.Action]) async {
        for action in actions {
            switch action {
            case .send(let frames):
                // A standby's requests carry no records: every protocol can say them.
                _ = try? socket.trySend(Message(parts: (try? WireDialect.translate(frames, to: leaderProtocol)) ?? frames))
            case .append(let records, let through, let lastEpoch):
                await append(records, through: through, lastEpoch: lastEpoch)
            case .truncate(let keep):
                inFlight = Task { await self.truncate(keep: keep) }
            case .commit(let through):
                await apply(through: through)
            case .install(let seq, let epoch, let instances, let sessions):
                inFlight = Task { await self.install(seq: seq, epoch: epoch, instances: instances, sessions: sessions) }
            }
        }
    }

    private func append(_ records: [[UInt8]], through: UInt64, lastEpoch: UInt32) async {
        let first = through - UInt64(records.count) + 1
        let batch = records.enumerated().map { (seq: first + UInt64($0.offset), record: $0.element) }
        do {
            try writer.runHere { log in
                try log.append(batch)
                try log.commit()
            }
            trace?.note(records: records, .standbyDurable, at: WallClock.micros())
            await carryOut(copy.appended(through: through, lastEpoch: lastEpoch, now: WallClock.micros()))
        } catch {
            logger.error("the log refused the leader's entries; fetching them again", metadata: ["flowkit.error": "\(error)"])
            await carryOut(copy.truncated(durable: copy.durable, lastEpoch: copy.lastEpoch, now: WallClock.micros()))
        }
    }

    /// Saves the leader's snapshot, starts the log again after it and restores the replica from it.
    /// In that order: a crash between leaves a snapshot ahead of the log, which a restart restores
    /// and then installs again.
    private func install(seq: UInt64, epoch: UInt32, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) async {
        do {
            if let snapshots {
                try await BackgroundWork.shared.run {
                    try snapshots.save(Snapshot(seq: seq, bytes: SnapshotCodec.encode(instances, sessions: sessions)))
                }
            }
            try await writer.run { log in try log.reset(after: seq) }
            // Before the restore: a pass of ``apply(through:)`` reading the old log meanwhile
            // stops (the replica skips what it already holds, whichever comes first).
            applied = seq
            applyTarget = max(applyTarget, seq)
            try await replica.restore(seq: seq, instances: instances, sessions: sessions)
            logger.notice("installed the leader's snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"])
            await carryOut(copy.installed(seq: seq, epoch: epoch, now: WallClock.micros()))
        } catch {
            logger.error("could not install the leader's snapshot; fetching it again", metadata: ["flowkit.error": "\(error)"])
            await carryOut(copy.installFailed(now: WallClock.micros()))
        }
    }

    private func truncate(keep: UInt64) async {
        do {
            let lastEpoch = try await writer.run { log -> UInt32 in
                try log.removeSuffix(after: keep)
                guard keep > 0, let record = try log.read(from: keep, maxCount: 1, maxBytes: 1 << 20).first else { return 0 }
                return Entry.peekEpoch(record) ?? 0
            }
            logger.notice("cut the log back to where it agrees with the leader's", metadata: ["flowkit.kept_through": "\(keep)"])
            await carryOut(copy.truncated(durable: keep, lastEpoch: lastEpoch, now: WallClock.micros()))
        } catch {
            logger.error("could not cut the log back to \(keep)", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Applies the committed entries the replica has not seen, from the local log: its newest
    /// records in memory (``LogWriter/recent``), older ones read back on the log's thread. One
    /// pass at a time: a call while one runs (the actor is reentrant at each await) moves its target.
    func apply(through seq: UInt64) async {
        applyTarget = max(applyTarget, seq)
        guard !isApplying else { return }
        isApplying = true
        defer { isApplying = false }
        while applied < applyTarget {
            let from = applied + 1
            do {
                let records = try await Self.committedRecords(from: from, in: writer)
                let entries = try records.prefix(Int(applyTarget - applied)).map { try quarantine.entry($0).entry }
                guard let last = entries.last else { return }
                guard from == applied + 1 else { continue }  // a snapshot was installed meanwhile
                await replica.applyNow(entries)
                applied = max(applied, last.seq)
            } catch {
                logger.error("could not apply committed entries from the log", metadata: ["flowkit.from": "\(from)", "flowkit.error": "\(error)"])
                return
            }
        }
    }

    /// The records from `seq` on that one pass applies: from memory when the log still keeps them
    /// there, else read on the log's thread.
    private static func committedRecords(from seq: UInt64, in writer: LogWriter) async throws -> [[UInt8]] {
        if let records = writer.recent.readPass(from: seq) { return records }
        return try await writer.run { log in try log.readPass(from: seq) }
    }
}
