import FlowKitCore
import FlowKitLog
import Logging

/// Opens what a coordinator keeps on disk, and recovers from it after a restart (a `kill -9`
/// included): the term counter, the log, and the latest snapshot of every instance.
///
/// Layout of the data directory: `meta/` (the epoch), `log/` (segments of entry records) and
/// `snapshots/` (the coordinator replica's states at a seq, which let the log be compacted).
struct CoordinatorStorage {
    let log: any EntryLog
    let snapshots: SnapshotStore?
    let epoch: UInt32

    /// Opens storage: on disk when the configuration names a data directory, in memory otherwise.
    static func open(_ configuration: CoordinatorConfiguration, logger: Logger) throws -> CoordinatorStorage {
        guard let directory = configuration.dataDirectory else {
            // Nothing remembers the last term, so a random number names this one: every start
            // differs (two restarts within a second included), and nodes see that the log they
            // knew is gone.
            let epoch = UInt32.random(in: 1...UInt32.max)
            return CoordinatorStorage(log: MemoryEntryLog(), snapshots: nil, epoch: epoch)
        }
        let meta = try MetaStore(directory: directory + "/meta", logger: logger)
        let epoch = try meta.increment("epoch")
        let log = try DurableEntryLog(
            directory: directory + "/log",
            options: SegmentLog.Options(segmentBytes: configuration.segmentBytes, durability: configuration.durability == .synced ? .synced : .relaxed),
            logger: logger
        )
        let snapshots = try SnapshotStore(directory: directory + "/snapshots", logger: logger)
        return CoordinatorStorage(log: log, snapshots: snapshots, epoch: UInt32(truncatingIfNeeded: epoch))
    }

    /// Rebuilds the replica and the duplicate table: the latest snapshot, then every entry after it.
    /// Entries no message can carry are applied as their quarantined stand-ins, as they are served.
    ///
    /// - Parameter applyThrough: The last seq the replica may apply: replicated, the log may end
    ///   with entries that are not committed (and may yet be cut), so only the snapshot is
    ///   restored and the rest waits for the commit point.
    /// - Returns: How many log entries were replayed, and the seqs of those quarantined.
    func recover(
        into replica: CoordinatorReplica,
        sequencer: inout Sequencer,
        quarantine: EntryQuarantine,
        applyThrough: UInt64 = .max,
        logger: Logger
    ) async throws -> (replayed: Int, quarantined: [UInt64]) {
        let from = try await restoreSnapshot(into: replica, logger: logger)
        // Every retained entry teaches the duplicate table; those after the snapshot also rebuild
        // the replica.
        var replayed = 0
        var quarantined: [UInt64] = []
        try await Self.forEachEntry(in: log, quarantine: quarantine) { batch in
            for entry in batch {
                if entry.quarantined { quarantined.append(entry.entry.seq) }
                sequencer.recover(entry.entry)
            }
            let applied = batch.lazy.map(\.entry).filter { $0.seq >= from && $0.seq <= applyThrough }
            replayed += applied.count
            await replica.applyNow(Array(applied))
        }
        return (replayed, quarantined)
    }

    /// Restores the replica from the latest snapshot, if there is one.
    ///
    /// - Returns: The first seq the log must supply after it.
    /// - Throws: If the log starts after seq 1 and no snapshot covers what it dropped.
    func restoreSnapshot(into replica: CoordinatorReplica, logger: Logger) async throws -> UInt64 {
        guard let snapshot = try snapshots?.latest() else {
            guard log.firstSeq <= 1 else { throw ProtocolError(.internalError, "the log starts at \(log.firstSeq) but there is no snapshot to start from") }
            return log.firstSeq
        }
        let instances = try SnapshotCodec.decode(snapshot.bytes)
        try await replica.restore(seq: snapshot.seq, instances: instances)
        logger.info("restored the replica from a snapshot", metadata: ["flowkit.seq": "\(snapshot.seq)", "flowkit.instances": "\(instances.count)"])
        return max(log.firstSeq, snapshot.seq + 1)
    }

    /// The duplicate table and the epochs of the whole retained log, for a coordinator that
    /// starts to lead: its replica is left alone. Run it where the log is confined (``LogWriter``).
    static func recover(_ sequencer: inout Sequencer, from log: any EntryLog) throws {
        var seq = log.firstSeq
        while seq <= log.lastSeq {
            let records = try log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20)
            guard !records.isEmpty else { break }
            for record in records {
                let entry = try Entry(decoding: record)
                sequencer.recover(entry)
                seq = entry.seq + 1
            }
        }
    }

    /// Every retained entry, in batches, as served (quarantined ones as their stand-ins).
    private static func forEachEntry(
        in log: any EntryLog, quarantine: EntryQuarantine, _ body: ([(entry: Entry, quarantined: Bool)]) async throws -> Void
    ) async throws {
        var seq = log.firstSeq
        while seq <= log.lastSeq {
            let records = try log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20)
            guard !records.isEmpty else { break }
            var batch: [(entry: Entry, quarantined: Bool)] = []
            for record in records {
                let entry = try quarantine.entry(record)
                batch.append(entry)
                seq = entry.entry.seq + 1
            }
            try await body(batch)
        }
    }
}
