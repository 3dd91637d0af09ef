import FlowKitCore
import Logging
import Synchronization

/// The coordinator's own copy of every instance, applied after each commit and never running
/// effects. It serves snapshots to joining nodes and reference digests for divergence checks,
/// and it applies on a task of its own, so neither ever holds up the order.
actor CoordinatorReplica {
    private let replicas: ReplicaSet
    private(set) var applied: UInt64
    /// Which submissions of each session the entries applied were: kept in snapshots, so a
    /// coordinator that starts from one (its log compacted, or installed from the leader's) still
    /// knows a retry of what was ordered before.
    private(set) var sessions: DedupTable
    /// Restored from a snapshot written before snapshots kept the sessions: they are known only
    /// from the log.
    private var sessionsBeforeRestoreUnknown = false
    private let dedupWindow: Int
    /// Committed entries not applied yet, in commit order.
    private let queued = Mutex<[Entry]>([])
    /// Says that ``queued`` has entries; signals given while the replica is busy fold into one.
    private let signal: AsyncStream<Void>.Continuation
    private let signals: AsyncStream<Void>
    /// A task waits for the digest round's next slice to be due (``hashNextSlice()``).
    private var sliceScheduled = false
    /// ``applied`` when the last digest round started: the same at the next means the log is idle.
    private var appliedAtLastRound: UInt64 = 0
    private let versions: ReadableVersions
    /// The entry after ``applied`` this build cannot read (a standby older than its leader): the
    /// replica applies nothing from it on, until the coordinator runs a build that reads it.
    private(set) var unreadable: UnreadableEntry?
    private let logger: Logger
    /// The version of each flow not at 1 its states are in (``FlowRegistry/versionsAboveOne``).
    let flowVersions: [String: UInt16]?

    /// - Parameter restAfter: ``CoordinatorConfiguration/restAfter``.
    init(registry: FlowRegistry, applied: UInt64, dedupWindow: Int = 65_536, restAfter: Duration? = .microseconds(Int64(ReplicaSet.restAfter)), logger: Logger) {
        self.replicas = ReplicaSet(
            registry: registry, context: .passive(logger: logger), logger: logger, restAfter: restAfter.map { UInt64(max(0, $0.microseconds)) }
        )
        self.applied = applied
        self.versions = ReadableVersions(registry)
        self.flowVersions = registry.versionsAboveOne
        self.logger = logger
        self.dedupWindow = dedupWindow
        self.sessions = DedupTable(window: dedupWindow)
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues committed entries for applying, in commit order. Never suspends.
    nonisolated func enqueue(_ batch: [Entry]) {
        queued.withLock { $0.append(contentsOf: batch) }
        signal.yield()
    }

    /// How long the replica lets commits gather after applying some. Nothing waits for it (it
    /// serves snapshots and reference digests, each stamped with the seq it covers), and applying
    /// on every commit woke a thread of the task pool for each one: under load, more than a
    /// thousand times a second for a handful of entries each.
    static let gatherInterval: Duration = .milliseconds(10)

    /// Applies queued entries until the stream finishes, at most once per ``gatherInterval`` while
    /// they keep coming.
    func run() async {
        for await _ in signals {
            applyNow(queued.withLock { queued in
                var taken: [Entry] = []
                swap(&taken, &queued)
                return taken
            })
            try? await Task.sleep(for: Self.gatherInterval)
        }
    }

    /// Applies entries at once, during recovery, before the coordinator serves anyone.
    func applyNow(_ batch: [Entry]) {
        for entry in batch where entry.seq > applied {
            guard unreadable == nil else { return }
            if let wall = versions.unreadable(entry) {
                unreadable = wall
                logger.critical("the coordinator's replica stopped applying: \(wall)")
                return
            }
            replicas.apply(entry, runEffects: false)
            sessions.note(entry)
            applied = entry.seq
        }
    }

    func finish() {
        signal.finish()
    }

    /// Every instance's state at ``applied``, and the sessions remembered.
    func snapshot() -> (seq: UInt64, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) {
        (applied, replicas.exportStates(), sessions.remembered())
    }

    /// Replaces every instance with a snapshot's (when recovering from a durable snapshot, or
    /// installing the leader's), and the sessions with what it remembered.
    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance], sessions remembered: [DedupTable.Remembered]) throws {
        try replicas.importStates(instances)
        applied = seq
        sessions = DedupTable(window: dedupWindow)
        sessions.restore(remembered)
        sessionsBeforeRestoreUnknown = remembered.isEmpty && seq > 0
    }

    /// The first seq of a log starting at `firstSeq` that a coordinator starting to lead must read
    /// to know every session: the first its replica has not applied (``sessions`` noted the rest),
    /// or the log's first after a snapshot that kept no sessions.
    func firstUnlearned(inLogFrom firstSeq: UInt64) -> UInt64 {
        sessionsBeforeRestoreUnknown ? firstSeq : max(firstSeq, applied + 1)
    }

    /// The digests computed since the last call, to compare with the nodes' (elsewhere), and how
    /// many instances the replica holds; starts a round of hashing what changed since, a slice at
    /// a time on the background thread, spread over `span` (most of the time until the next call).
    /// Idle since the last call, it settles every digest (``ReplicaSet/settleDigests()``), as a
    /// node does: the backlog a load left is hashed outside the budget, not over minutes.
    func takeChangedDigests(spreadOver span: Duration) -> (changed: [Address: ChangedDigest], instances: Int) {
        if applied == appliedAtLastRound { _ = replicas.settleDigests() }
        appliedAtLastRound = applied
        let changed = replicas.takeChanged(hashing: false)
        replicas.startDigestRound(now: WallClock.micros(), spreadOver: UInt64(max(0, span.microseconds)))
        hashNextSlice()
        return (changed, replicas.count)
    }

    /// Whether the round of hashing the last ``takeChangedDigests(spreadOver:)`` started is over.
    var isDigestRoundDone: Bool { replicas.isDigestRoundDone }

    /// Hashes the round's next slice on the background thread, or, when it is not due yet, once it is.
    private func hashNextSlice() {
        let now = WallClock.micros()
        let jobs = replicas.nextDigestSlice(now: now)
        guard !jobs.isEmpty else {
            if let due = replicas.nextDigestSliceDue, due > now, !sliceScheduled {
                sliceScheduled = true
                Task { [weak self] in
                    try? await Task.sleep(for: .microseconds(due - now))
                    await self?.sliceIsDue()
                }
            }
            return
        }
        BackgroundWork.idle.start { [weak self] in
            let (results, micros) = ReplicaSet.hash(jobs)
            Task { await self?.finishHashing(results, micros: micros) }
        }
    }

    private func sliceIsDue() {
        sliceScheduled = false
        hashNextSlice()
    }

    private func finishHashing(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        replicas.finishDigestJobs(results, hashingMicros: micros)
        hashNextSlice()
    }

    /// Every instance's state, copied now, to encode elsewhere, and the sessions remembered.
    func snapshotJobs() -> (seq: UInt64, jobs: ReplicaSet.StateExport, sessions: [DedupTable.Remembered]) {
        (applied, replicas.exportStateJobs(), sessions.remembered())
    }

    /// Who may run effects of how many instances, as of ``applied``, and the instances of those
    /// not in `live`: the owners whose node went down, restarted or is not known to this
    /// coordinator, whose effects are to be taken over.
    func ownership(live: Set<EffectOwner>) -> EffectOwnership {
        let counts = replicas.ownerCounts
        var orphaned: [EffectOwner: [String]] = [:]
        for owner in counts.keys where !live.contains(owner) { orphaned[owner] = replicas.instances(ownedBy: owner) }
        return EffectOwnership(applied: applied, counts: counts, orphaned: orphaned)
    }

    /// Each instance's last takeover, for those taken over: a leader refuses effects' submissions
    /// under older terms.
    var fences: [String: UInt64] { replicas.fences }

    var instanceCount: Int { replicas.count }

    /// Every instance's state hashed into one digest, now (the simulation's checks).
    func combinedDigest() -> String {
        "\(replicas.combinedDigest(exact: true))"
    }
}

/// Who may run the effects of which instances, as a coordinator's replica knows it from the log.
struct EffectOwnership: Sendable {
    /// The seq the replica had applied.
    var applied: UInt64 = 0
    /// How many instances each process may run effects of.
    var counts: [EffectOwner: Int] = [:]
    /// The instances of each owner that was not live, to take over.
    var orphaned: [EffectOwner: [String]] = [:]
}
