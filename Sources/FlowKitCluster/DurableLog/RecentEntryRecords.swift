import DequeModule
import Synchronization

/// The newest records of a log, consecutive seqs, at most ``maxBytes`` of them (the newest group
/// always stays, whatever its size): the value that ``RecentEntryRecords`` and the leader's
/// ``ReplicationFeed`` each keep behind a lock.
struct RecordWindow {
    /// The most record bytes kept; the oldest go first.
    let maxBytes: Int
    /// The seq of `records.first`.
    private(set) var firstSeq: UInt64
    private(set) var records: Deque<[UInt8]> = []
    private var bytes = 0

    init(maxBytes: Int, firstSeq: UInt64 = 1) {
        self.maxBytes = maxBytes
        self.firstSeq = firstSeq
    }

    /// The seq of the newest record (`firstSeq - 1` when empty).
    var lastSeq: UInt64 { firstSeq + UInt64(records.count) - 1 }

    /// `records`, the first at `seq`, after what the window holds; a group that does not follow
    /// it (nothing held, a log opened with entries, started again) replaces it.
    mutating func append(_ records: some Collection<[UInt8]>, from seq: UInt64) {
        guard !records.isEmpty else { return }
        if seq != lastSeq + 1 || self.records.isEmpty {
            self = RecordWindow(maxBytes: maxBytes, firstSeq: seq)
        }
        for record in records {
            self.records.append(record)
            bytes += record.count
        }
        while bytes > maxBytes, self.records.count > records.count, let oldest = self.records.popFirst() {
            bytes -= oldest.count
            firstSeq += 1
        }
    }

    /// Nothing after `seq` is held any more.
    mutating func cut(after seq: UInt64) {
        while !records.isEmpty, lastSeq > seq, let newest = records.popLast() {
            bytes -= newest.count
        }
    }

    /// The record at `seq`, if held.
    func record(at seq: UInt64) -> [UInt8]? {
        guard !records.isEmpty, seq >= firstSeq, seq <= lastSeq else { return nil }
        return records[Int(seq - firstSeq)]
    }

    /// Up to `maxCount` records from `seq` on, fewer if `maxBytes` is reached first (at least one);
    /// `nil` when `seq` is not held.
    func read(from seq: UInt64, maxCount: Int, maxBytes: Int) -> [[UInt8]]? {
        guard record(at: seq) != nil else { return nil }
        var result: [[UInt8]] = []
        var bytes = 0
        for index in Int(seq - firstSeq)..<records.count {
            let record = records[index]
            guard result.count < maxCount, result.isEmpty || bytes + record.count <= maxBytes else { break }
            result.append(record)
            bytes += record.count
        }
        return result
    }
}

/// The newest records an ``EntryLog`` holds, in memory, readable from any thread: a coordinator's
/// replica applies what committed from here, without a turn through the log's thread (where a
/// read waits for the sync under way, and the next append waits for the read) or reading back
/// and checking the records it has just written.
///
/// The log keeps it in step: every append adds, a failed commit, a cut and a reset take away,
/// so what it holds is what the log holds at those seqs: its newest records, a suffix of the log.
/// A read of anything older gets `nil` and goes to the log.
final class RecentEntryRecords: Sendable {
    private let window: Mutex<RecordWindow>

    init(maxBytes: Int = 4 << 20) {
        window = Mutex(RecordWindow(maxBytes: maxBytes))
    }

    /// The log appended `records`.
    func append(_ records: [(seq: UInt64, record: [UInt8])]) {
        guard let first = records.first else { return }
        window.withLock { $0.append(records.lazy.map(\.record), from: first.seq) }
    }

    /// The log no longer holds anything after `seq` (a failed commit rolled back, a cut).
    func cut(after seq: UInt64) {
        window.withLock { $0.cut(after: seq) }
    }

    /// The log starts again (after a snapshot): nothing it held before is here.
    func clear() {
        window.withLock { $0 = RecordWindow(maxBytes: $0.maxBytes) }
    }

    /// Up to `maxCount` records from `seq` on, fewer if `maxBytes` is reached first (at least one);
    /// `nil` when `seq` is not held here (older than what is kept, or not written yet).
    func read(from seq: UInt64, maxCount: Int, maxBytes: Int) -> [[UInt8]]? {
        window.withLock { $0.read(from: seq, maxCount: maxCount, maxBytes: maxBytes) }
    }
}

/// What one pass of a coordinator replica's apply reads of its log.
extension RecentEntryRecords {
    static let passCount = 4_096
    static let passBytes = 4 << 20

    /// The records from `seq` on that one pass applies, when `seq` is held here (and so everything
    /// after it).
    func readPass(from seq: UInt64) -> [[UInt8]]? {
        read(from: seq, maxCount: Self.passCount, maxBytes: Self.passBytes)
    }
}

extension EntryLog {
    /// The records from `seq` on that one pass of the replica's apply takes: from ``recent`` when
    /// it holds `seq`, else read back.
    func readPass(from seq: UInt64) throws -> [[UInt8]] {
        try recent.readPass(from: seq) ?? read(from: seq, maxCount: RecentEntryRecords.passCount, maxBytes: RecentEntryRecords.passBytes)
    }
}
