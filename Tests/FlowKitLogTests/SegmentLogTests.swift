import FlowKitLog
import Testing

@Suite("SegmentLog basics")
struct SegmentLogTests {
    @Test func appendCommitReadRoundTrip() throws {
        let dir = TemporaryDirectory("roundtrip")
        let log = try SegmentLog(directory: dir.file("log"), logger: quietLogger)
        #expect(log.firstSeq == nil && log.lastSeq == nil && log.nextSeq == nil)
        try log.append(records(1...100))
        #expect(log.pendingCount == 100 && log.nextSeq == 101)
        #expect(log.lastSeq == nil, "uncommitted records are not visible")
        #expect(try log.read(from: 1).isEmpty)
        #expect(try log.commit() == 100)
        #expect(log.firstSeq == 1 && log.lastSeq == 100 && log.pendingCount == 0)
        #expect(try readAll(log) == records(1...100))
        #expect(try log.read(from: 40, maxCount: 5) == records(40...44))
        #expect(try log.read(from: 101).isEmpty)
        #expect(log.statistics.commits == 1 && log.statistics.recordsCommitted == 100)
        #expect(log.statistics.lastCommitDuration > .zero)
    }

    @Test func maxBytesLimitsButAlwaysReturnsOne() throws {
        let dir = TemporaryDirectory("maxbytes")
        let log = try SegmentLog(directory: dir.path, logger: quietLogger)
        try log.append(records(1...10, size: 100))
        try log.commit()
        #expect(try log.read(from: 1, maxCount: 100, maxBytes: 350).map(\.seq) == [1, 2, 3])
        #expect(try log.read(from: 5, maxCount: 100, maxBytes: 10).map(\.seq) == [5])
        #expect(try log.read(from: 5, maxCount: 0).isEmpty)
    }

    @Test func readsCrossSegmentBoundaries() throws {
        let dir = TemporaryDirectory("segments")
        let options = SegmentLog.Options(segmentBytes: 4096, indexIntervalBytes: 256)
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        for start in stride(from: UInt64(1), through: 2_000, by: 100) {
            try log.append(records(start...(start + 99)))
            try log.commit()
        }
        #expect(log.segmentCount > 20)
        #expect(segmentFiles(in: dir.path).count == log.segmentCount)
        #expect(try readAll(log) == records(1...2_000))
        #expect(try log.read(from: 777, maxCount: 600) == records(777...1_376))
        log.close()

        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(reopened.firstSeq == 1 && reopened.lastSeq == 2_000 && reopened.nextSeq == 2_001)
        #expect(try readAll(reopened) == records(1...2_000))
    }

    @Test func reopenAfterCleanCloseContinues() throws {
        let dir = TemporaryDirectory("reopen")
        do {
            let log = try SegmentLog(directory: dir.path, logger: quietLogger)
            try log.append(records(10...19))
            try log.commit()
            try log.append(records(20...25))  // never committed
            log.close()
            #expect(throws: LogError.self) { try log.append(records(26...26)) }
        }
        let log = try SegmentLog(directory: dir.path, logger: quietLogger)
        #expect(log.firstSeq == 10)
        #expect(log.lastSeq == 19 || log.lastSeq == 25, "uncommitted records may or may not survive")
        #expect(try readAll(log) == records(10...log.lastSeq!))
        #expect(log.statistics.bytesTruncatedAtRecovery == 0)
    }

    @Test func nonContiguousAppendsAreRejected() throws {
        let dir = TemporaryDirectory("contiguous")
        let log = try SegmentLog(directory: dir.path, logger: quietLogger)
        try log.append(records(5...6))
        let gap = #expect(throws: LogError.self) { try log.append(seq: 8, payload: [1]) }
        #expect(gap?.code == .nonContiguous)
        #expect(gap?.message.contains("expected seq 7") == true)
        #expect(throws: LogError.self) { try log.append(seq: 6, payload: [1]) }
        // A batch with a hole inside appends nothing.
        let batch = [LogRecord(seq: 7, payload: [7]), LogRecord(seq: 9, payload: [9])]
        #expect(throws: LogError.self) { try log.append(batch) }
        #expect(log.nextSeq == 7 && log.pendingCount == 2)
        try log.commit()
        #expect(try readAll(log).map(\.seq) == [5, 6])
    }

    @Test func emptyBatchAndEmptyCommitAreNoOps() throws {
        let dir = TemporaryDirectory("empty")
        let log = try SegmentLog(directory: dir.path, logger: quietLogger)
        try log.append([LogRecord]())
        #expect(try log.commit() == nil)
        #expect(segmentFiles(in: dir.path).isEmpty)
        try log.append(seq: 1, payload: [])
        try log.commit()
        #expect(try log.commit() == 1)
        #expect(log.statistics.commits == 1)
        #expect(try log.read(from: 1) == [LogRecord(seq: 1, payload: [])])
    }

    @Test func secondOpenOfTheSameDirectoryIsLocked() throws {
        let dir = TemporaryDirectory("lock")
        let log = try SegmentLog(directory: dir.path, logger: quietLogger)
        let error = #expect(throws: LogError.self) { try SegmentLog(directory: dir.path, logger: quietLogger) }
        #expect(error?.code == .locked)
        log.close()
        _ = try SegmentLog(directory: dir.path, logger: quietLogger)
    }

    @Test func relaxedDurabilityRoundTrips() throws {
        let dir = TemporaryDirectory("relaxed")
        let options = SegmentLog.Options(segmentBytes: 8192, durability: .relaxed)
        do {
            let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
            try log.append(records(1...500))
            try log.commit()
        }
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(try readAll(log) == records(1...500))
    }

    @Test func largeBatchesStreamThroughTheWriteBuffer() throws {
        let dir = TemporaryDirectory("stream")
        let options = SegmentLog.Options(segmentBytes: 1 << 20, writeBufferBytes: 4096)
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        try log.append(records(1...3_000, size: 1_000))
        try log.commit()
        #expect(log.segmentCount >= 3)
        #expect(try readAll(log) == records(1...3_000, size: 1_000))
        // A record larger than a segment gets a segment of its own.
        try log.append(seq: 3_001, payload: [UInt8](repeating: 9, count: 2 << 20))
        try log.commit()
        #expect(try log.read(from: 3_001).first?.payload.count == 2 << 20)
    }
}

extension SegmentLogTests {
    /// A new segment reserves its whole size at once, so appends never grow the file (and
    /// `fdatasync` writes no file size); a sealed segment is cut to its last record; a reopened
    /// log keeps the reserved space; a torn record in it is cut as usual.
    @Test func preallocatedSegmentsReserveTheirSpaceAndAreCutWhenSealed() throws {
        let dir = TemporaryDirectory("prealloc")
        let options = SegmentLog.Options(segmentBytes: 64 << 10)
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        try log.append(records(1...10, size: 100))
        try log.commit()
        let first = dir.file(segmentFiles(in: dir.path)[0])
        #expect(fileSize(first) == 64 << 10)
        // Past the segment's size: the first is sealed, cut to its records; the next reserves.
        for batch in 0..<8 {
            try log.append(records(UInt64(11 + batch * 100)...UInt64(110 + batch * 100), size: 100))
            try log.commit()
        }
        let files = segmentFiles(in: dir.path)
        #expect(files.count >= 2)
        let sealedSize = fileSize(dir.file(files[0]))
        #expect(sealedSize < 64 << 10 && (sealedSize - 32) % (16 + 100) == 0, "sealed at its last record: \(sealedSize)")
        #expect(fileSize(dir.file(files[files.count - 1])) == 64 << 10)
        log.close()

        let reopened = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(reopened.lastSeq == 810)
        #expect(reopened.statistics.bytesTruncatedAtRecovery == 0)
        let expected: [LogRecord] = records(1...810, size: 100)
        #expect(try readAll(reopened) == expected)
        reopened.close()

        // A torn record: some of its bytes in the reserved space.
        let last = dir.file(files[files.count - 1])
        var bytes = readFile(last)
        let end = bytes.lastIndex { $0 != 0 }! + 1
        bytes.replaceSubrange(end..<end + 20, with: [UInt8](repeating: 0xAB, count: 20))
        writeFile(last, bytes)
        let recovered = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(recovered.lastSeq == 810)
        #expect(recovered.statistics.bytesTruncatedAtRecovery == (64 << 10) - end)
    }
}
