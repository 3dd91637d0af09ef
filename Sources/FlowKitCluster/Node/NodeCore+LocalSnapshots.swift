import Dispatch
import FlowKitCore
import FlowKitLog
import Logging
import ZeroMQ

extension NodeCore {
    /// Loads the newest local snapshot and the deltas after it, if the node has a data directory
    /// and one was saved: the node then resumes from the last one's seq and repairs the rest from
    /// the coordinator's log.
    func restoreLocalSnapshot() {
        guard let directory = configuration.dataDirectory else { return }
        do {
            let store = try SnapshotStore(directory: directory + "/snapshots", logger: logger)
            localSnapshots = LocalSnapshots(store: store)
            replicas.trackChanges(everything: true)
            guard let (instances, chain) = try LocalSnapshots.load(from: store) else { return }
            let seq = chain.end ?? 0
            let consistentFrom = try interpreter.resume(fromLocalSnapshots: instances, chain: chain)
            localSnapshots?.lastSavedSeq = seq
            localSnapshots?.chain = chain
            logger.info(
                "resumed from a local snapshot; the rest comes from the coordinator's log",
                metadata: [
                    "flowkit.seq": "\(seq)", "flowkit.consistentFrom": "\(consistentFrom)", "flowkit.instances": "\(replicas.count)",
                    "flowkit.deltas": "\(chain.deltas)",
                ]
            )
        } catch {
            replicas.trackChanges(everything: true)
            logger.error("could not load the local snapshot; joining from the coordinator", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Starts a snapshot when one is due (the interval passed, entries were applied since the
    /// last, and the last one's cost allows: ``SnapshotPacing``): of every instance (a base), or
    /// of those changed since the last (a delta), as ``LocalSnapshots/Chain`` decides. The loop
    /// copies the states a slice per turn (``continueLocalSnapshot()``), entries applied between
    /// the slices; encoding and writing them happen on the background thread.
    func saveLocalSnapshotIfDue(now: UInt64) {
        guard let snapshots = localSnapshots, snapshots.copying == nil, !snapshots.saving, applied > snapshots.lastSavedSeq,
            now >= snapshots.nextDue, snapshots.pacing.allows(now: now)
        else { return }
        let (follows, copy) = snapshots.chain.startNext(from: replicas, at: applied)
        localSnapshots?.copying = LocalSnapshots.Copying(follows: follows, copy: copy)
        localSnapshots?.nextDue = now + LocalSnapshots.interval(configuration.snapshotInterval)
        continueLocalSnapshot()
    }

    /// Copies the next slice of the snapshot being taken; then, if some are left, lets the loop
    /// take its other work before the next, or else hands the states to the background thread.
    func continueLocalSnapshot() {
        guard var copying = localSnapshots?.copying else { return }
        let started = ThreadCPUClock.micros()
        replicas.copy(copying.copy, atMost: LocalSnapshots.copiedPerTurn)
        copying.micros += ThreadCPUClock.micros() - started
        copying.turns += 1
        localSnapshots?.copying = copying
        guard copying.copy.isDone else {
            // The next slice waits for the loop's next wait on its sockets, and what it brought:
            // a job queued at once would run in the same turn, before any socket is read again.
            Task(executorPreference: loop) { [weak self, loop] in
                // A loop that stopped takes no more slices: the node is stopping.
                guard (try? await loop.sleep(until: .now)) != nil else { return }
                await self?.continueLocalSnapshot()
            }
            return
        }
        localSnapshots?.copying = nil
        guard !copying.copy.isAbandoned, let store = localSnapshots?.store else { return }  // replaced by a snapshot: the next is a base
        localSnapshots?.saving = true
        let (follows, seq, states, loop) = (copying.follows, copying.copy.start, copying.copy.states, loop)
        let copied = LocalSnapshots.Copied(micros: copying.micros, turns: copying.turns, consistentFrom: copying.copy.consistentFrom)
        BackgroundWork.shared.start { [weak self] in
            let started = ThreadCPUClock.micros()
            var dutyCycle = SnapshotDutyCycle()
            let result = Result {
                let (bytes, count) = SnapshotCodec.encode(states, order: .asHeld, checking: { dutyCycle.restIfDue() })
                if let follows {
                    try store.saveDelta(Snapshot(seq: seq, bytes: bytes), follows: follows)
                } else {
                    try store.save(Snapshot(seq: seq, bytes: bytes))
                }
                return count
            }
            let cost = ThreadCPUClock.micros() - started
            Task(executorPreference: loop) {
                await self?.localSnapshotSaved(seq: seq, follows: follows, result: result, cost: cost, copied: copied)
            }
        }
    }

    /// - Parameters:
    ///   - follows: The seq the delta saved follows; nil for a base.
    ///   - result: How many instances it holds, or why it was not saved.
    ///   - copied: What copying the states took of the loop (the rest was elsewhere).
    private func localSnapshotSaved(seq: UInt64, follows: UInt64?, result: Result<Int, any Error>, cost: UInt64, copied: LocalSnapshots.Copied) {
        localSnapshots?.saving = false
        localSnapshots?.pacing.saved(cost: cost, now: WallClock.micros())
        switch result {
        case .success(let count):
            localSnapshots?.lastSavedSeq = seq
            localSnapshots?.chain.saved(seq: seq, records: count, delta: follows != nil)
            logger.debug(
                follows == nil ? "local snapshot saved" : "local snapshot delta saved",
                metadata: [
                    "flowkit.seq": "\(seq)", "flowkit.instances": "\(count)", "flowkit.loopMicros": "\(copied.micros)",
                    "flowkit.loopTurns": "\(copied.turns)", "flowkit.consistentFrom": "\(copied.consistentFrom)",
                    "flowkit.backgroundMicros": "\(cost)",
                ]
            )
        case .failure(let error):
            LocalSnapshots.notSaved(replicas)
            logger.error("could not save a local snapshot", metadata: ["flowkit.error": "\(error)"])
        }
    }
}

/// A node's local snapshots and when it last saved one.
struct LocalSnapshots {
    /// The files a restart reads: a base (every instance) and the deltas after it (each the
    /// instances changed since the file before), and when the next is a base again.
    struct Chain: Equatable {
        /// At most this many deltas follow a base: a restart reads every one.
        static let maxDeltas = 32

        /// The seq of the chain's last file; nil before the first base.
        var end: UInt64?
        /// The instances the base holds, and the deltas after it.
        var baseRecords = 0
        var deltaRecords = 0
        var deltas = 0

        /// The seq a delta of `changed` instances follows, or nil when the next is a base: there is
        /// none yet, or the deltas would hold more records than half the base (a restart reads a
        /// base and at most half as many again; Kafka's cleaner waits for half a log dirty too), or
        /// ``maxDeltas`` follow it already.
        func continued(by changed: Int) -> UInt64? {
            guard let end, changed <= room else { return nil }
            return end
        }

        /// The most instances the next delta may hold.
        var room: Int { end == nil || deltas >= Self.maxDeltas ? 0 : max(0, baseRecords / 2 - deltaRecords) }

        /// ``room`` once a file of `records` instances is saved: how many changed addresses are
        /// worth keeping meanwhile (``ReplicaSet/trackChanges(everything:keptAtMost:)``).
        func room(afterSaving records: Int, delta: Bool) -> Int {
            var next = self
            next.saved(seq: end ?? 0, records: records, delta: delta)
            return next.room
        }

        /// The next snapshot's copy of `replicas`, started at `seq`, and the seq it follows: a
        /// delta of the instances changed since the last, or (nil) a base of every one.
        func startNext(from replicas: ReplicaSet, at seq: UInt64) -> (follows: UInt64?, copy: ReplicaSet.StateCopy) {
            let follows = replicas.everythingChanged ? nil : continued(by: replicas.changedCount)
            let records = follows == nil ? replicas.count : replicas.changedCount
            let keptAtMost = room(afterSaving: records, delta: follows != nil)
            return (follows, replicas.startCopy(at: seq, everything: follows == nil, keptAtMost: keptAtMost))
        }

        /// A file of `records` instances was saved at `seq`: a delta, or a base.
        mutating func saved(seq: UInt64, records: Int, delta: Bool) {
            if delta {
                deltaRecords += records
                deltas += 1
            } else {
                (baseRecords, deltaRecords, deltas) = (records, 0, 0)
            }
            end = seq
        }
    }

    /// The instances the newest base and the deltas after it hold (``SnapshotStore/latestChain()``),
    /// merged (``merged(_:_:)``), and the chain they make; nil when there is no base.
    static func load(from store: SnapshotStore) throws -> (instances: [SnapshotChunkMessage.Instance], chain: Chain)? {
        guard let files = try store.latestChain() else { return nil }
        let base = try SnapshotCodec.decode(files.snapshot.bytes).instances
        let deltas = try files.deltas.map { (seq: $0.seq, instances: try SnapshotCodec.decode($0.bytes).instances) }
        return joined(base: (files.snapshot.seq, base), deltas: deltas)
    }

    /// A base's instances with its deltas' merged in (``merged(_:_:)``), and the chain they make.
    static func joined(
        base: (seq: UInt64, instances: [SnapshotChunkMessage.Instance]), deltas: [(seq: UInt64, instances: [SnapshotChunkMessage.Instance])]
    ) -> (instances: [SnapshotChunkMessage.Instance], chain: Chain) {
        let chain = Chain(
            end: deltas.last?.seq ?? base.seq, baseRecords: base.instances.count, deltaRecords: deltas.reduce(0) { $0 + $1.instances.count },
            deltas: deltas.count
        )
        return (merged(base.instances, deltas.map(\.instances)), chain)
    }

    /// A snapshot that was not saved: the changes it held are in no file, so the next snapshot
    /// holds every instance.
    static func notSaved(_ replicas: ReplicaSet) {
        replicas.trackChanges(everything: true)
    }

    /// The instances of a base with its deltas applied in order: each address once, as the last
    /// file that holds it has it (the base's order first, then the addresses new in the deltas).
    static func merged(_ base: [SnapshotChunkMessage.Instance], _ deltas: [[SnapshotChunkMessage.Instance]]) -> [SnapshotChunkMessage.Instance] {
        var latest: [String: SnapshotChunkMessage.Instance] = [:]
        for delta in deltas {
            for instance in delta { latest[instance.address] = instance }
        }
        guard !latest.isEmpty else { return base }
        var merged = base.map { latest.removeValue(forKey: $0.address) ?? $0 }
        merged.append(contentsOf: latest.values)
        return merged
    }

    /// A snapshot being copied: the seq it follows (nil for a base), the copy, and the loop's CPU
    /// and turns it took so far.
    struct Copying {
        let follows: UInt64?
        let copy: ReplicaSet.StateCopy
        var micros: UInt64 = 0
        var turns = 0
    }

    /// What copying a snapshot took of the loop: its CPU and turns, and the highest last seq
    /// among the states copied (``ReplicaSet/StateCopy/consistentFrom``).
    struct Copied: Sendable {
        var micros: UInt64
        var turns: Int
        var consistentFrom: UInt64
    }

    /// How many instances the loop copies per turn: about a millisecond's work.
    static let copiedPerTurn = 1_000

    /// How long after one snapshot starts the next is due: `interval` and up to a quarter more,
    /// at random, so that nodes started together do not all copy and encode at the same moment.
    static func interval(_ interval: Duration) -> UInt64 {
        UInt64(Double(max(0, interval.microseconds)) * Double.random(in: 1...1.25))
    }

    let store: SnapshotStore
    var chain = Chain()
    var lastSavedSeq: UInt64 = 0
    /// When the next snapshot is due: at once on start, when entries were applied.
    var nextDue: UInt64 = 0
    /// The snapshot being copied, if one is.
    var copying: Copying?
    /// Whether the background thread is encoding and writing one.
    var saving = false
    var pacing = SnapshotPacing()
}
