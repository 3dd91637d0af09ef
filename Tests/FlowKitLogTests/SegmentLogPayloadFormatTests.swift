import FlowKitLog
import Testing

/// A log's user numbers the layout of its payloads; each segment records it, and a log opened with
/// another format than its last segment's never mixes the two in one segment.
@Suite("SegmentLog payload formats")
struct SegmentLogPayloadFormatTests {
    static func options(format: UInt32) -> SegmentLog.Options {
        var options = SegmentLog.Options(segmentBytes: 1 << 20, preallocate: false)
        options.payloadFormat = format
        return options
    }

    @Test func recordsReadWithTheFormatOfTheSegmentThatHoldsThem() throws {
        let dir = TemporaryDirectory()
        do {
            let old = try SegmentLog(directory: dir.path, options: Self.options(format: 0), logger: quietLogger)
            try old.append((1...3).map { LogRecord(seq: $0, payload: [UInt8($0)]) })
            _ = try old.commit()
            old.close()
        }
        let new = try SegmentLog(directory: dir.path, options: Self.options(format: 7), logger: quietLogger)
        #expect(new.segmentCount == 1)
        try new.append((4...5).map { LogRecord(seq: $0, payload: [UInt8($0)]) })
        _ = try new.commit()
        // The old segment holds records, so the new format starts a segment of its own.
        #expect(new.segmentCount == 2)
        let read = try new.read(from: 1, maxCount: 10)
        #expect(read.map(\.seq) == [1, 2, 3, 4, 5])
        #expect(read.map(\.payloadFormat) == [0, 0, 0, 7, 7])
        new.close()
        // Reopened, the formats come from the segments' headers.
        let again = try SegmentLog(directory: dir.path, options: Self.options(format: 7), logger: quietLogger)
        #expect(try again.read(from: 1, maxCount: 10).map(\.payloadFormat) == [0, 0, 0, 7, 7])
    }

    /// An empty last segment of another format (a log reset, or rolled, by an older build) takes the
    /// new format before its first record.
    @Test func anEmptyLastSegmentTakesTheNewFormat() throws {
        let dir = TemporaryDirectory()
        do {
            let old = try SegmentLog(directory: dir.path, options: Self.options(format: 0), logger: quietLogger)
            try old.reset(nextSeq: 10)
            old.close()
        }
        let new = try SegmentLog(directory: dir.path, options: Self.options(format: 3), logger: quietLogger)
        try new.append(seq: 10, payload: [1])
        _ = try new.commit()
        #expect(new.segmentCount == 1)
        new.close()
        let again = try SegmentLog(directory: dir.path, options: Self.options(format: 3), logger: quietLogger)
        #expect(try again.read(from: 10).map(\.payloadFormat) == [3])
    }
}
