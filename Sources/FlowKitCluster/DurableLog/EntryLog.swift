import FlowKitLog

/// Where the coordinator keeps the ordered entries: appended in groups, made durable at each
/// commit, read back for gap repair and late joins, and compacted once a snapshot covers a prefix.
///
/// Used from one thread at a time (the coordinator's ``LogWriter``).
protocol EntryLog: AnyObject {
    /// The oldest seq still held, or `lastSeq + 1` when the log is empty.
    var firstSeq: UInt64 { get }
    /// The newest seq held; 0 when nothing was ever written.
    var lastSeq: UInt64 { get }
    /// The epoch of every entry held, kept as the log is written, cut and reset: a coordinator
    /// that starts leading reads no entry its replica already applied.
    var epochs: EpochHistory { get }
    /// Its newest records, readable from any thread (the replica applies from them).
    var recent: RecentEntryRecords { get }

    /// Appends encoded entry records with consecutive seqs after ``lastSeq``.
    func append(_ records: [(seq: UInt64, record: [UInt8])]) throws
    /// Makes everything appended durable: the group-commit point. After a failure, nothing since the
    /// previous commit is in the log.
    func commit() throws
    /// Up to `maxCount` records from `seq` on, fewer if `maxBytes` is reached first.
    func read(from seq: UInt64, maxCount: Int, maxBytes: Int) throws -> [[UInt8]]
    /// Drops entries up to `seq` (whole segments at most), once a durable snapshot covers them;
    /// returns the files to delete, which the caller does off the log's thread.
    func removePrefix(through seq: UInt64) throws -> DetachedSegments
    /// Drops every entry after `seq`, durably: a follower coordinator's tail that its leader's log
    /// does not hold (ordered by a deposed leader, never committed).
    func removeSuffix(after seq: UInt64) throws
    /// Drops every entry and starts the log again after `seq`, durably: a standby coordinator that
    /// installed a snapshot at `seq`. Never backwards.
    func reset(after seq: UInt64) throws
}

extension EntryLog {
    /// The newest seq held and the epoch that ordered it: (0, 0) when nothing was ever written.
    /// A log that holds nothing after the snapshot it started again after (``reset(after:)``)
    /// ends at the snapshot's seq, in an epoch it does not know: 0.
    func end() throws -> (seq: UInt64, epoch: UInt32) {
        guard lastSeq >= firstSeq, let record = try read(from: lastSeq, maxCount: 1, maxBytes: 1 << 24).first else { return (lastSeq, 0) }
        return (lastSeq, Entry.peekEpoch(record) ?? 0)
    }
}

/// An in-memory log: for tests and for clusters that need no durability.
final class MemoryEntryLog: EntryLog {
    private var records: [[UInt8]] = []
    private(set) var firstSeq: UInt64 = 1
    private(set) var epochs = EpochHistory()
    let recent = RecentEntryRecords()
    private var uncommitted = 0

    var lastSeq: UInt64 { firstSeq + UInt64(records.count) - 1 }

    func append(_ batch: [(seq: UInt64, record: [UInt8])]) throws {
        for (seq, record) in batch {
            precondition(seq == lastSeq + 1, "seq \(seq) does not follow \(lastSeq)")
            records.append(record)
            uncommitted += 1
        }
        epochs.note(batch)
        recent.append(batch)
    }

    func commit() throws { uncommitted = 0 }

    func read(from seq: UInt64, maxCount: Int, maxBytes: Int) throws -> [[UInt8]] {
        guard seq >= firstSeq else {
            throw ProtocolError(.notFound, "entries before \(firstSeq) were compacted; fetch a snapshot")
        }
        guard seq <= lastSeq else { return [] }
        var result: [[UInt8]] = []
        var bytes = 0
        for record in records[Int(seq - firstSeq)...] {
            guard result.count < maxCount, result.isEmpty || bytes + record.count <= maxBytes else { break }
            result.append(record)
            bytes += record.count
        }
        return result
    }

    func removeSuffix(after seq: UInt64) throws {
        guard seq < lastSeq else { return }
        guard seq + 1 >= firstSeq else {
            throw ProtocolError(.internalError, "cannot keep the log up to \(seq): it starts at \(firstSeq)")
        }
        records.removeLast(Int(lastSeq - seq))
        epochs.cut(after: seq)
        recent.cut(after: seq)
    }

    func reset(after seq: UInt64) throws {
        guard seq >= lastSeq else { throw ProtocolError(.internalError, "cannot start the log again after \(seq): it holds \(lastSeq)") }
        records = []
        uncommitted = 0
        firstSeq = seq + 1
        epochs = EpochHistory()
        recent.clear()
    }

    func removePrefix(through seq: UInt64) throws -> DetachedSegments {
        guard seq >= firstSeq, lastSeq >= firstSeq else { return DetachedSegments() }
        let drop = Int(min(seq, lastSeq) - firstSeq + 1)
        records.removeFirst(drop)
        firstSeq += UInt64(drop)
        return DetachedSegments()
    }
}
