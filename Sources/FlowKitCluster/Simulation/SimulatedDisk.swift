/// A coordinator's disk in a simulation: the log keeps what was synced across crashes, and the
/// epoch with it. A write reaches the log only when its sync completes; a crash before that loses
/// it, as a crash loses writes that were never synced.
final class SimulatedDisk {
    let log = MemoryEntryLog()
    var epoch: UInt32 = 0
    /// The latest snapshot saved: every instance's state at a seq, which lets the log be compacted.
    var snapshot: (seq: UInt64, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered])?
    /// What compaction dropped from the log, by seq: for the checks alone (a real disk forgets it).
    var archive: [UInt64: [UInt8]] = [:]
    /// While full, every write fails.
    var isFull = false
    /// When the last sync asked for finishes: one writer, syncs finish in order.
    var lastSyncDone: UInt64 = 0

    /// The last seq the log holds and the epoch that ordered it (``CoordinatorStandby/logEnd(_:)``).
    var end: (seq: UInt64, epoch: UInt32) { (try? log.end()) ?? (0, 0) }
}

/// A write asked of a simulated disk, until its sync completes.
struct SimulatedWrite {
    var records: [(seq: UInt64, record: [UInt8])]
    /// Decided when the write was asked for: a full disk refuses it.
    var succeeds: Bool
}
