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

    /// Restores the replica from the latest snapshot, if there is one.
    ///
    /// - Returns: The first seq the log must supply after it.
    /// - Throws: If the log starts after seq 1 and no snapshot covers what it dropped.
    func restoreSnapshot(into replica: CoordinatorReplica, logger: Logger) async throws -> UInt64 {
        guard let snapshot = try snapshots?.latest() else {
            guard log.firstSeq <= 1 else { throw ProtocolError(.internalError, "the log starts at \(log.firstSeq) but there is no snapshot to start from") }
            return log.firstSeq
        }
        let (instances, sessions) = try SnapshotCodec.decode(snapshot.bytes)
        try await replica.restore(seq: snapshot.seq, instances: instances, sessions: sessions)
        logger.info("restored the replica from a snapshot", metadata: ["flowkit.seq": "\(snapshot.seq)", "flowkit.instances": "\(instances.count)"])
        return max(log.firstSeq, snapshot.seq + 1)
    }

    /// Reads the log from `firstSeq` on and throws, naming it, at the first entry a build that
    /// reads `versions` cannot: a replicated coordinator checks its copy so when it starts, as one
    /// running alone does as it recovers (docs/VERSIONING.md, guarantee 2), rather than standing by
    /// with a log it could never lead from.
    func refuseUnreadable(from firstSeq: UInt64, versions: ReadableVersions) throws {
        var seq = firstSeq
        while seq <= log.lastSeq, case let records = try log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20), !records.isEmpty {
            for record in records {
                let entry = try Entry(decoding: record)
                if let unreadable = versions.unreadable(entry) {
                    throw ProtocolError(.versionUnreadable, "this coordinator's build cannot read its log, so it does not start: \(unreadable)")
                }
                seq = entry.seq + 1
            }
        }
    }

    /// What a coordinator reads of its log when it starts to lead, in one pass: every entry from
    /// `firstSeq` on teaches the duplicate table, and those after the replica's last applied seq
    /// up to `committed` bring the replica up to date. Entries no message can carry are applied as
    /// their quarantined stand-ins, as they are served.
    ///
    /// - Parameters:
    ///   - firstSeq: The first seq to read: the first the replica's sessions do not know
    ///     (``CoordinatorReplica/firstUnlearned(inLogFrom:)``).
    ///   - read: The records from a seq on, a batch at a time; none past the log's end.
    /// - Returns: How many entries the replica applied, the seqs of those quarantined, and each
    ///   taken-over instance's last takeover (the replica's, and those of the log's uncommitted
    ///   tail, which the leader commits).
    static func recover(
        _ sequencer: inout Sequencer, replica: CoordinatorReplica, from firstSeq: UInt64, committed: UInt64, quarantine: EntryQuarantine,
        read: (UInt64) async throws -> [[UInt8]]
    ) async throws -> (replayed: Int, quarantined: [UInt64], fences: [String: UInt64]) {
        let applied = await replica.applied
        var replayed = 0
        var quarantined: [UInt64] = []
        var tailFences: [String: UInt64] = [:]
        var seq = firstSeq
        while case let records = try await read(seq), !records.isEmpty {
            var batch: [Entry] = []
            batch.reserveCapacity(records.count)
            for record in records {
                let (entry, wasQuarantined) = try quarantine.entry(record)
                if wasQuarantined { quarantined.append(entry.seq) }
                sequencer.recover(entry)
                if entry.kind == .takeover, entry.seq > committed { tailFences[entry.address] = entry.seq }
                batch.append(entry)
                seq = entry.seq + 1
            }
            let due = batch.filter { $0.seq > applied && $0.seq <= committed }
            replayed += due.count
            if !due.isEmpty { await replica.applyNow(due) }
        }
        let fences = await replica.fences.merging(tailFences) { max($0, $1) }
        return (replayed, quarantined, fences)
    }
}
