import Dispatch
import FlowKitCore
import FlowKitLog
import Logging

/// Keeps the log bounded: every `every` entries it saves a snapshot of the coordinator's replica
/// (no more often than ``SnapshotPacing`` allows), then drops log segments that lie wholly below
/// `snapshot - retain`.
///
/// The snapshot is copied from the replica (which pauses its own applying, never the order) and
/// encoded and written on the background thread, at low priority, so commits go on meanwhile.
actor Compactor {
    private let replica: CoordinatorReplica
    private let writer: LogWriter
    private let snapshots: SnapshotStore
    private let every: UInt64
    private let retain: UInt64
    private let logger: Logger
    private var lastSnapshot: UInt64 = 0
    private var pacing = SnapshotPacing()
    /// Whether a snapshot is being encoded and saved now, and who waits for it to be saved.
    private(set) var isSaving = false
    private var waitingForTheSave: [CheckedContinuation<Void, Never>] = []

    init(
        replica: CoordinatorReplica, writer: LogWriter, snapshots: SnapshotStore,
        every: UInt64, retain: UInt64, logger: Logger
    ) {
        self.replica = replica
        self.writer = writer
        self.snapshots = snapshots
        self.every = every
        self.retain = retain
        self.logger = logger
        self.lastSnapshot = (try? snapshots.latest()?.seq) ?? 0
    }

    /// Saves a snapshot and compacts if `every` entries were applied since the last; tells
    /// `compacted` where the log now starts.
    ///
    /// Among replicated coordinators every one compacts its own log, leader and standbys alike:
    /// its replica holds only committed entries, so nothing it drops can still be cut. A standby
    /// that falls behind what the leader kept installs the leader's snapshot (``StandbyCopy``).
    func compactIfDue(compacted: (UInt64) async -> Void) async {
        guard await replica.applied >= lastSnapshot + every, pacing.allows(now: WallClock.micros()) else { return }
        let (seq, jobs, sessions) = await replica.snapshotJobs()
        let snapshots = self.snapshots
        isSaving = true
        defer {
            isSaving = false
            for waiting in waitingForTheSave { waiting.resume() }
            waitingForTheSave = []
        }
        do {
            // Encoded and written on the background thread: the states were copied at `seq`. A
            // stop abandons it (the task is cancelled): a million states took the coordinator's
            // exit a second on an idle machine, and longer on a busy one.
            let (instances, encodeMicros, cost) = try await BackgroundWork.shared.run(abandonable: { abandonment in
                let started = ThreadCPUClock.micros()
                var dutyCycle = SnapshotDutyCycle()
                let (bytes, count) = try SnapshotCodec.encode(jobs, sessions: sessions) {
                    try abandonment.check()
                    dutyCycle.restIfDue()
                }
                let encoded = ThreadCPUClock.micros()
                try abandonment.check()
                try snapshots.save(Snapshot(seq: seq, bytes: bytes))
                return (count, encoded - started, ThreadCPUClock.micros() - started)
            })
            pacing.saved(cost: cost, now: WallClock.micros())
            lastSnapshot = seq
            guard seq > retain else { return }
            let through = seq - retain
            let (first, detached) = try await writer.run { log in
                let detached = try log.removePrefix(through: through)
                return (log.firstSeq, detached)
            }
            await compacted(first)
            // Deleted here, not on the log's thread: its commits do not wait for the file system.
            try await BackgroundWork.shared.run { try detached.delete() }
            logger.info(
                "snapshot saved, log compacted",
                metadata: [
                    "flowkit.seq": "\(seq)", "flowkit.instances": "\(instances)", "flowkit.first": "\(first)",
                    "flowkit.encodeMicros": "\(encodeMicros)", "flowkit.backgroundMicros": "\(cost)",
                ]
            )
        } catch is CancellationError {
            logger.info("snapshot abandoned: stopping", metadata: ["flowkit.seq": "\(seq)"])
        } catch {
            logger.error("could not save a snapshot or compact the log", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Waits for the snapshot being saved now, if one is; whether one was. A node that joins
    /// meanwhile is served it rather than a second encoding of the same states (``SavedSnapshots``).
    func waitForTheSaveUnderWay() async -> Bool {
        guard isSaving else { return false }
        await withCheckedContinuation { waitingForTheSave.append($0) }
        return true
    }
}
