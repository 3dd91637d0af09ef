/// The snapshot the sync socket serves, encoded once for every request that arrives while it is
/// being encoded: a million instances take seconds to encode, a node that waits long enough asks
/// again, and several nodes join at once after an outage. Each encoded its own before, and the
/// work grew with every request while the first was still being made. A request that arrives
/// once the encoding is done starts a new one (the states moved on).
actor SnapshotEncoding {
    /// What a snapshot holds: the replica's applied seq, every instance in address order, and the
    /// sessions the coordinator remembers.
    struct Snapshot: Sendable {
        let seq: UInt64
        let instances: [SnapshotChunkMessage.Instance]
        let sessions: [DedupTable.Remembered]
    }

    private let replica: CoordinatorReplica
    private var inFlight: Task<Snapshot, any Error>?
    /// How many snapshots were encoded.
    private(set) var encoded = 0

    init(replica: CoordinatorReplica) {
        self.replica = replica
    }

    /// The snapshot being encoded, or a new one: the replica only copies the states, and they are
    /// encoded on the background thread, as the ``Compactor`` does.
    func current() async throws -> Snapshot {
        if let inFlight { return try await inFlight.value }
        let task = Task { [replica] in
            let (seq, jobs, sessions) = await replica.snapshotJobs()
            let instances = try await BackgroundWork.shared.run { ReplicaSet.encode(jobs) }
            return Snapshot(seq: seq, instances: instances, sessions: sessions)
        }
        inFlight = task
        encoded += 1
        defer { inFlight = nil }
        return try await task.value
    }
}
