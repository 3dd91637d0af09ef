import Dispatch
import FlowKitCore
import FlowKitLog
import Logging
import ZeroMQ

extension NodeCore {
    /// Loads the newest local snapshot, if the node has a data directory and one was saved: the
    /// node then resumes from its seq and repairs the rest from the coordinator's log.
    func restoreLocalSnapshot() {
        guard let directory = configuration.dataDirectory else { return }
        do {
            let store = try SnapshotStore(directory: directory + "/snapshots", logger: logger)
            localSnapshots = LocalSnapshots(store: store)
            guard let snapshot = try store.latest() else { return }
            try replicas.importStates(try SnapshotCodec.decode(snapshot.bytes).instances)
            interpreter.update { $0.resumeFollowing(from: snapshot.seq) }
            localSnapshots?.lastSavedSeq = snapshot.seq
            logger.info(
                "resumed from a local snapshot; the rest comes from the coordinator's log",
                metadata: ["flowkit.seq": "\(snapshot.seq)", "flowkit.instances": "\(replicas.count)"]
            )
        } catch {
            logger.error("could not load the local snapshot; joining from the coordinator", metadata: ["flowkit.error": "\(error)"])
        }
    }

    /// Saves a snapshot of every instance on the background thread, when one is due (the interval
    /// passed, enough changed since the last: ``LocalSnapshots/changesDue(holding:)``, and the
    /// last one's cost allows: ``SnapshotPacing``): only copying the states happens here; encoding
    /// and writing them does not hold up the loop thread.
    func saveLocalSnapshotIfDue(now: UInt64) {
        guard let snapshots = localSnapshots, !snapshots.saving, applied - snapshots.lastSavedSeq >= LocalSnapshots.changesDue(holding: replicas.count),
            now - snapshots.lastSaveTime >= UInt64(configuration.snapshotInterval.microseconds), snapshots.pacing.allows(now: now)
        else { return }
        let seq = applied
        let copyStarted = ThreadCPUClock.micros()
        let states = replicas.exportStateJobs()
        let copyMicros = ThreadCPUClock.micros() - copyStarted
        localSnapshots?.saving = true
        localSnapshots?.lastSaveTime = now
        let store = snapshots.store
        let loop = sockets.client.loop
        BackgroundWork.shared.start { [weak self] in
            let started = ThreadCPUClock.micros()
            var dutyCycle = SnapshotDutyCycle()
            let result = Result { try store.save(Snapshot(seq: seq, bytes: SnapshotCodec.encode(states, order: .asHeld, checking: { dutyCycle.restIfDue() }).bytes)) }
            let cost = ThreadCPUClock.micros() - started
            Task(executorPreference: loop) { await self?.localSnapshotSaved(seq: seq, result: result, cost: cost, copyMicros: copyMicros) }
        }
    }

    /// - Parameter copyMicros: The CPU the loop spent copying the states (the rest was elsewhere).
    private func localSnapshotSaved(seq: UInt64, result: Result<Void, any Error>, cost: UInt64, copyMicros: UInt64) {
        localSnapshots?.saving = false
        localSnapshots?.pacing.saved(cost: cost, now: WallClock.micros())
        switch result {
        case .success:
            localSnapshots?.lastSavedSeq = seq
            logger.debug(
                "local snapshot saved",
                metadata: ["flowkit.seq": "\(seq)", "flowkit.loopMicros": "\(copyMicros)", "flowkit.backgroundMicros": "\(cost)"]
            )
        case .failure(let error):
            logger.error("could not save a local snapshot", metadata: ["flowkit.error": "\(error)"])
        }
    }
}

/// A node's local snapshots and when it last saved one.
struct LocalSnapshots {
    /// A snapshot rewrites every instance the node holds, so one waits for entries in proportion:
    /// at least one for every `instancesPerEntry` instances held, and at least one. A node holding
    /// a million and applying an entry a second rewrote all of them every interval, however little
    /// had changed; now it waits for 62,500 entries: fewer than the coordinator's log keeps behind
    /// its snapshot by default (``CoordinatorConfiguration/retainEntries``), so a restart still
    /// resumes from the snapshot plus the log.
    static let instancesPerEntry = 16

    /// How many entries applied since the last snapshot make the next one due.
    static func changesDue(holding instances: Int) -> UInt64 { UInt64(max(1, instances / instancesPerEntry)) }

    let store: SnapshotStore
    var lastSavedSeq: UInt64 = 0
    var lastSaveTime: UInt64 = 0
    var saving = false
    var pacing = SnapshotPacing()
}
