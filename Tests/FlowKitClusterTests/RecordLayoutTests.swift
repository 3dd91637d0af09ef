@_spi(Wire) @testable import FlowKitCluster
import FlowKitLog
import Foundation
import Logging
import Testing

/// The coordinator's log written by a build before entries recorded their flow's version still
/// reads, in today's layout, and what is appended after it is in today's.
@Suite struct RecordLayoutTests {
    static func entry(_ seq: UInt64, kind: EntryKind = .event, version: UInt16 = 1) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: kind, codec: .json, version: version, origin: 1, session: 1, submission: seq, submittedAt: 5,
            committedAt: 6, address: "counter/a", payload: kind == .event ? Array(#"{"increment":{}}"#.utf8) : []
        )
    }

    @Test func aLogWrittenBeforeVersionsReadsAsVersionOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entry-log-layout-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let options = SegmentLog.Options(segmentBytes: 1 << 20, preallocate: false)
        // What a protocol-3 coordinator wrote: records without the version field, in segments of
        // payload format 0.
        let written = [Self.entry(1), Self.entry(2, kind: .cancelAll, version: 0), Self.entry(3)]
        do {
            let old = try SegmentLog(directory: directory, options: options, logger: logger)
            try old.append(written.map { entry in
                var record = entry.encoded
                record.removeSubrange(Entry.versionOffset..<Entry.versionOffset + 2)
                return LogRecord(seq: entry.seq, payload: record)
            })
            _ = try old.commit()
            old.close()
        }
        let log = try DurableEntryLog(directory: directory, options: options, logger: logger)
        #expect(log.epochs.epoch(of: 3) == 1)
        try log.append([(4, Self.entry(4, version: 2).encoded)])
        try log.commit()
        let expected = written + [Self.entry(4, version: 2)]
        #expect(try log.read(from: 1, maxCount: 10, maxBytes: 1 << 20).map { try Entry(decoding: $0) } == expected)
        log.close()
        let reopened = try DurableEntryLog(directory: directory, options: options, logger: logger)
        #expect(try reopened.read(from: 1, maxCount: 10, maxBytes: 1 << 20).map { try Entry(decoding: $0) } == expected)
        reopened.close()
    }
}
