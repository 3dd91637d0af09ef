import FlowKitLog
import Logging
import Testing

@Suite("SegmentLog compaction")
struct SegmentLogCompactionTests {
    private let options = SegmentLog.Options(segmentBytes: 2048)

    private func filledLog(_ dir: borrowing TemporaryDirectory, through last: UInt64 = 300) throws -> SegmentLog {
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        try log.append(records(1...last, size: 40))
        try log.commit()
        return log
    }

    /// First seqs of the segment files, from their names.
    private func segmentStarts(_ dir: borrowing TemporaryDirectory) -> [UInt64] {
        segmentFiles(in: dir.path).map { UInt64($0.dropLast(4))! }
    }

    @Test func removesOnlyWholeSegments() throws {
        let dir = TemporaryDirectory("compact")
        let log = try filledLog(dir)
        let starts = segmentStarts(dir)
        #expect(starts.count > 5)

        // A seq inside the third segment removes the first two only.
        #expect(try log.removePrefix(through: starts[2] + 1) == 2)
        #expect(segmentStarts(dir) == Array(starts.dropFirst(2)))
        #expect(log.firstSeq == starts[2])
        let error = #expect(throws: LogError.self) { try log.read(from: starts[2] - 1) }
        #expect(error?.code == .compacted)
        #expect(error?.message.contains("snapshot") == true)
        #expect(try readAll(log) == records(starts[2]...300, size: 40))

        // The seq just before a segment's start removes everything before that segment.
        #expect(try log.removePrefix(through: starts[4] - 1) == 2)
        #expect(log.firstSeq == starts[4])
        #expect(try log.removePrefix(through: starts[4] - 1) == 0)

        // Everything: the last segment stays, so the position survives.
        try log.removePrefix(through: .max)
        #expect(segmentStarts(dir) == [starts.last!])
        #expect(log.lastSeq == 300 && log.nextSeq == 301)
        log.close()

        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(reopened.firstSeq == starts.last! && reopened.lastSeq == 300)
        try reopened.append(records(301...310, size: 40))
        try reopened.commit()
        #expect(try readAll(reopened) == records(starts.last!...310, size: 40))
    }

    /// Segments taken out of the log leave it at once, and their files are deleted apart (off the
    /// log's thread, in a coordinator); a log reopened before they are deleted is valid and
    /// longer, and the next compaction shortens it again.
    @Test func detachedSegmentsLeaveTheLogAndAreDeletedApart() throws {
        let dir = TemporaryDirectory("compactdetach")
        let log = try filledLog(dir)
        let starts = segmentStarts(dir)
        let detached = try log.detachPrefix(through: starts[3] - 1)
        #expect(detached.count == 3 && log.firstSeq == starts[3])
        #expect(segmentStarts(dir) == starts, "the files stay until deleted")
        #expect(throws: LogError.self) { try log.read(from: starts[3] - 1) }
        log.close()

        // A crash before the deletion: the log opens with them, whole.
        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(reopened.firstSeq == 1 && reopened.lastSeq == 300)
        #expect(try readAll(reopened) == records(1...300, size: 40))
        reopened.close()
        try detached.delete()
        #expect(segmentStarts(dir) == Array(starts.dropFirst(3)))
        let again = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(again.firstSeq == starts[3])
        #expect(try readAll(again) == records(starts[3]...300, size: 40))
    }

    @Test func uncommittedSegmentsAreNeverRemoved() throws {
        let dir = TemporaryDirectory("compactpending")
        let log = try filledLog(dir, through: 10)
        try log.append(records(11...300, size: 40))  // rolls several segments, uncommitted
        #expect(try log.removePrefix(through: .max) == 0)
        try log.commit()
        #expect(try log.removePrefix(through: .max) > 0)
    }

    @Test func resetStartsAnEmptyLogAtANewSeq() throws {
        let dir = TemporaryDirectory("reset")
        let log = try filledLog(dir)
        let backwards = #expect(throws: LogError.self) { try log.reset(nextSeq: 200) }
        #expect(backwards?.code == .invalidArgument)

        try log.reset(nextSeq: 1_000)
        #expect(log.firstSeq == nil && log.lastSeq == nil && log.nextSeq == 1_000)
        #expect(segmentFiles(in: dir.path) == ["00000000000000001000.seg"])
        #expect(throws: LogError.self) { try log.append(seq: 1, payload: []) }
        log.close()

        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(reopened.nextSeq == 1_000 && reopened.lastSeq == nil)
        #expect((#expect(throws: LogError.self) { try reopened.read(from: 999) })?.code == .compacted)
        try reopened.append(records(1_000...1_009))
        try reopened.commit()
        #expect(try readAll(reopened) == records(1_000...1_009))
    }

    @Test func interruptedResetIsCompletedOnOpen() throws {
        let dir = TemporaryDirectory("resetcrash")
        // The state a crash leaves between creating the reset's empty segment and deleting the old ones.
        do {
            let other = try SegmentLog(directory: dir.file("other"), logger: quietLogger)
            try other.reset(nextSeq: 500)
        }
        do {
            let log = try filledLog(dir, through: 100)
            log.close()
        }
        writeFile(dir.file("00000000000000000500.seg"), readFile(dir.file("other/00000000000000000500.seg")))
        let capture = LogCapture()
        let log = try SegmentLog(directory: dir.path, options: options, logger: capture.logger)
        #expect(log.nextSeq == 500 && log.firstSeq == nil)
        #expect(segmentFiles(in: dir.path) == ["00000000000000000500.seg"])
        #expect(capture.contains(.notice, "interrupted reset"))
    }

    @Test func removeSuffixCutsTheTailAcrossSegmentsAndTheLogGoesOnFromThere() throws {
        let dir = TemporaryDirectory("suffix")
        let log = try filledLog(dir)
        let starts = segmentStarts(dir)
        #expect(starts.count > 5)
        // Inside the third segment: later segments go, the third is cut after the seq.
        let keep = starts[2] + 3
        try log.removeSuffix(after: keep)
        #expect(log.lastSeq == keep && log.nextSeq == keep + 1)
        #expect(segmentStarts(dir) == Array(starts.prefix(3)))
        #expect(try readAll(log) == records(1...keep, size: 40))
        // Different entries at the cut seqs: appended, committed, and there after a reopen.
        try log.append(records(keep + 1...keep + 20, size: 30))
        try log.commit()
        log.close()
        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(try readAll(reopened) == records(1...keep, size: 40) + records(keep + 1...keep + 20, size: 30))

        // At a segment's start: the segment stays, empty, and appends go on from the seq after.
        try reopened.removeSuffix(after: starts[1] - 1)
        #expect(reopened.lastSeq == starts[1] - 1 && segmentStarts(dir) == Array(starts.prefix(2)))
        try reopened.append(records(starts[1]...starts[1] + 1))
        try reopened.commit()
        #expect(try readAll(reopened) == records(1...starts[1] - 1, size: 40) + records(starts[1]...starts[1] + 1))

        // Past the end: nothing to do. Before the compacted start: refused.
        try reopened.removeSuffix(after: 10_000)
        try reopened.removePrefix(through: starts[1] - 1)
        let refused = #expect(throws: LogError.self) { try reopened.removeSuffix(after: starts[1] - 2) }
        #expect(refused?.code == .invalidArgument)
        // Everything the log still holds: empty, at the same position.
        try reopened.removeSuffix(after: starts[1] - 1)
        #expect(reopened.lastSeq == nil && reopened.nextSeq == starts[1])
    }
}
