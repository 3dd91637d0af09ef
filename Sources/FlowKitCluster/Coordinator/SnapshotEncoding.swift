import FlowKitLog

/// The snapshot the sync socket serves, made once for every request that arrives while it is
/// being made: a million instances take seconds to encode, a node that waits long enough asks
/// again, and several nodes join at once after an outage. Each encoded its own before, and the
/// work grew with every request while the first was still being made. A request that arrives
/// once it is made starts a new one (the states moved on).
///
/// The coordinator's newest saved snapshot (``SavedSnapshots``) is served while few enough entries
/// follow it; only when more do is the replica encoded anew.
actor SnapshotEncoding {
    /// What a snapshot holds: the seq it was taken at, and its bytes (``SnapshotCodec``): every
    /// instance in address order and the sessions the coordinator remembers.
    struct Snapshot: Sendable {
        let seq: UInt64
        let records: SnapshotRecords
        /// Whether it is the coordinator's saved snapshot, not the replica encoded anew.
        let isSaved: Bool

        /// How many instances it holds.
        var count: Int { records.count }
    }

    private let replica: CoordinatorReplica
    private let saved: SavedSnapshots?
    private var inFlight: Task<Snapshot, any Error>?
    /// How many snapshots were encoded from the replica.
    private(set) var encoded = 0
    /// How many saved snapshots were served.
    private(set) var servedSaved = 0

    /// - Parameter saved: The coordinator's saved snapshots; nil keeps none (a memory log).
    init(replica: CoordinatorReplica, saved: SavedSnapshots? = nil) {
        self.replica = replica
        self.saved = saved
    }

    /// The snapshot being made, or a new one: the newest saved one if few enough entries follow
    /// it, else the replica's states, which the replica only copies and which are encoded on the
    /// background thread, as the ``Compactor`` does.
    func current() async throws -> Snapshot {
        if let inFlight { return try await inFlight.value }
        let task = Task { [replica, saved] in
            if let saved, let snapshot = await saved.newest(applied: replica.applied) { return snapshot }
            // The Compactor encodes the same states now: its snapshot, once saved, serves.
            if let saved, await saved.compactor?.waitForTheSaveUnderWay() == true, let snapshot = await saved.newest(applied: replica.applied) {
                return snapshot
            }
            let (seq, jobs, sessions) = await replica.snapshotJobs()
            let records = try await BackgroundWork.shared.run { try SnapshotRecords(SnapshotCodec.encode(jobs, sessions: sessions).bytes) }
            return Snapshot(seq: seq, records: records, isSaved: false)
        }
        inFlight = task
        defer { inFlight = nil }
        let snapshot = try await task.value
        if snapshot.isSaved { servedSaved += 1 } else { encoded += 1 }
        return snapshot
    }
}

/// The coordinator's saved snapshots (the ``Compactor``'s), as the sync socket serves them: a node
/// joining behind a million instances waited for them to be encoded again, most of its wait,
/// while the same states, a few entries older, lay on disk. Kafka and Raft followers install the
/// leader's saved snapshot the same way, and replay the log after it.
struct SavedSnapshots: Sendable {
    let store: SnapshotStore
    /// How many entries may follow a saved snapshot for it to be served, or more if it holds more
    /// instances (replaying fewer entries than it holds instances costs less than encoding them
    /// all anew). The log keeps every entry after the newest, so any would do; this bounds the
    /// joining node's replay. The coordinator gives `snapshotEvery + retainEntries`.
    let maxReplay: UInt64
    /// The Compactor that saves them: a snapshot it is saving when a node asks is waited for.
    var compactor: Compactor?

    /// The newest saved snapshot, read on the background thread (its records' lengths, not their
    /// contents: ``SnapshotRecords``), if few enough entries follow it; nil if there is none, it
    /// lies too far behind, or it cannot be read (the Compactor may be replacing it: the replica
    /// is encoded instead).
    func newest(applied: UInt64) async -> SnapshotEncoding.Snapshot? {
        let store = store
        return try? await BackgroundWork.shared.run { () -> SnapshotEncoding.Snapshot? in
            guard let seq = try store.seqs().first, seq <= applied else { return nil }
            let records = try SnapshotRecords(store.load(seq: seq).bytes)
            guard Self.serves(tail: applied - seq, instances: records.count, maxReplay: maxReplay) else { return nil }
            return SnapshotEncoding.Snapshot(seq: seq, records: records, isSaved: true)
        }
    }

    /// Whether a saved snapshot of `instances` with `tail` entries after it is served.
    static func serves(tail: UInt64, instances: Int, maxReplay: UInt64) -> Bool {
        tail <= max(maxReplay, UInt64(instances))
    }
}
