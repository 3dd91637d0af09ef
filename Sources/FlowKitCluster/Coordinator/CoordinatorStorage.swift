import FlowKit
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
    /// - Returns: How many log entries were replayed, and the seqs of those quarantined.
    func recover(
        into replica: CoordinatorReplica,
        sequencer: inout Sequencer,
        quarantine: EntryQuarantine,
        logger: Logger
    ) async throws -> (replayed: Int, quarantined: [UInt64]) {
        var from = log.firstSeq
        if let snapshot = try snapshots?.latest() {
            let instances = try SnapshotCodec.decode(snapshot.bytes)
            try await replica.restore(seq: snapshot.seq, instances: instances)
            from = max(from, snapshot.seq + 1)
            logger.info("restored the replica from a snapshot", metadata: ["flowkit.seq": "\(snapshot.seq)", "flowkit.instances": "\(instances.count)"])
        } else if from > 1 {
            throw ProtocolError(.internalError, "the log starts at \(from) but there is no snapshot to start from")
        }
        // Every retained entry teaches the duplicate table; those after the snapshot also rebuild
        // the replica.
        var replayed = 0
        var quarantined: [UInt64] = []
        var seq = log.firstSeq
        while seq <= log.lastSeq {
            let records = try log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20)
            guard !records.isEmpty else { break }
            var batch: [Entry] = []
            for record in records {
                var entry = try Entry(decoding: record)
                if quarantine.needsStandIn(record) {
                    entry = EntryQuarantine.standIn(for: entry)
                    quarantined.append(entry.seq)
                }
                sequencer.recover(entry)
                if entry.seq >= from { batch.append(entry) }
                seq = entry.seq + 1
            }
            replayed += batch.count
            await replica.applyNow(batch)
        }
        return (replayed, quarantined)
    }
}
