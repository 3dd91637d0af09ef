extension SimulatedCoordinator {
    /// Restores the replica from the disk's snapshot, if it has one (``CoordinatorStorage``).
    func restoreSnapshot() async throws {
        guard let snapshot = disk.snapshot else { return }
        try await replica.restore(seq: snapshot.seq, instances: snapshot.instances, sessions: snapshot.sessions)
        applied = snapshot.seq
    }

    /// Saves the leader's snapshot, starts the log again after it and restores the replica from
    /// it (``CoordinatorStandby``'s install).
    func install(seq: UInt64, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) async throws {
        landWrites()
        disk.snapshot = (seq, instances, sessions)
        try disk.log.reset(after: seq)
        try await replica.restore(seq: seq, instances: instances, sessions: sessions)
        applied = seq
    }

    /// Saves a snapshot of the replica and drops the log below it less `retain`, every `every`
    /// entries applied (``Compactor``); tells the machine, while it orders, where the log starts.
    func compactIfDue(every: UInt64, retain: UInt64) async {
        let lastSnapshot = disk.snapshot?.seq ?? 0
        guard await replica.applied >= lastSnapshot + every else { return }
        disk.snapshot = await replica.snapshot()
        let seq = disk.snapshot!.seq
        guard seq > retain, seq - retain >= disk.log.firstSeq else { return }
        let dropped = (try? disk.log.read(from: disk.log.firstSeq, maxCount: Int(seq - retain - disk.log.firstSeq + 1), maxBytes: .max)) ?? []
        for (offset, record) in dropped.enumerated() { disk.archive[disk.log.firstSeq + UInt64(offset)] = record }
        _ = try? disk.log.removePrefix(through: seq - retain)
        let first = disk.log.firstSeq
        interpreter?.update { $0.noteCompacted(firstSeq: first) }
    }
}
