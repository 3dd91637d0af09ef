import FlowKitLog
import Logging

/// The coordinator's log on disk: a ``SegmentLog`` of entry records, checksummed, group-committed
/// with `fdatasync` (or relaxed), recovered after a crash to the last record that is whole.
///
/// Its segments record the entry record layout they hold (``Entry/RecordLayout``): records an
/// older build wrote are read in today's layout.
final class DurableEntryLog: EntryLog {
    private let log: SegmentLog
    private(set) var epochs = EpochHistory()
    let recent = RecentEntryRecords()

    /// Opens the log and learns the epochs of what it holds, reading each record's header.
    init(directory: String, options: SegmentLog.Options, logger: Logger) throws {
        var options = options
        options.payloadFormat = Entry.logPayloadFormat
        log = try SegmentLog(directory: directory, options: options, logger: logger)
        var seq = firstSeq
        while seq <= lastSeq {
            let records = try log.read(from: seq, maxCount: 65_536, maxBytes: 64 << 20)
            guard let last = records.last else { break }
            for record in records {
                epochs.note(seq: record.seq, epoch: Entry.peekEpoch(record.payload) ?? 0)
            }
            seq = last.seq + 1
        }
    }

    var lastSeq: UInt64 { log.lastSeq ?? (log.nextSeq.map { $0 - 1 } ?? 0) }
    var firstSeq: UInt64 { log.firstSeq ?? lastSeq + 1 }

    func append(_ records: [(seq: UInt64, record: [UInt8])]) throws {
        try log.append(records.map { LogRecord(seq: $0.seq, payload: $0.record) })
        epochs.note(records)
        recent.append(records)
    }

    func commit() throws {
        do {
            try log.commit()
        } catch {
            // Rolled back to the last commit: the entries appended since never happened.
            epochs.cut(after: lastSeq)
            recent.cut(after: lastSeq)
            throw error
        }
    }

    func read(from seq: UInt64, maxCount: Int, maxBytes: Int) throws -> [[UInt8]] {
        do {
            return try log.read(from: seq, maxCount: maxCount, maxBytes: maxBytes).map { record in
                guard record.payloadFormat != Entry.RecordLayout.current.rawValue else { return record.payload }
                guard let layout = Entry.RecordLayout(rawValue: record.payloadFormat) else {
                    throw ProtocolError(
                        .internalError,
                        "entry \(record.seq) is in record layout \(record.payloadFormat), which this build does not know (it knows up to \(Entry.RecordLayout.current.rawValue)); a newer build wrote this log"
                    )
                }
                return layout.upgrade(record.payload)
            }
        } catch let error as LogError where error.code == .compacted {
            throw ProtocolError(.notFound, "entries before \(firstSeq) were compacted; fetch a snapshot")
        }
    }

    func removePrefix(through seq: UInt64) throws -> DetachedSegments {
        try log.detachPrefix(through: seq)
    }

    func removeSuffix(after seq: UInt64) throws {
        try log.removeSuffix(after: seq)
        epochs.cut(after: seq)
        recent.cut(after: seq)
    }

    func reset(after seq: UInt64) throws {
        try log.reset(nextSeq: seq + 1)
        epochs = EpochHistory()
        recent.clear()
    }

    func close() {
        log.close()
    }
}
