import FlowKitCluster
import FlowKitLog
import FlowKitTools
import Logging
import Testing

@Suite("SegmentLog recovery")
struct SegmentLogRecoveryTests {
    /// A one-segment log with records 1...5 (payloads of 40 bytes), as a log that grows its file
    /// record by record leaves it; returns the file and where record 5 starts.
    private func pristineSegment(in dir: borrowing TemporaryDirectory) throws -> (bytes: [UInt8], lastRecordStart: Int) {
        let log = try SegmentLog(directory: dir.file("pristine"), options: .init(preallocate: false), logger: quietLogger)
        try log.append(records(1...5, size: 40))
        try log.commit()
        log.close()
        let bytes = readFile(dir.file("pristine/" + segmentFiles(in: dir.file("pristine"))[0]))
        return (bytes, bytes.count - (16 + 40))
    }

    /// Opens a log whose single segment holds `bytes`; returns it and what it logged.
    private func open(_ bytes: [UInt8], in dir: borrowing TemporaryDirectory, name: String) throws -> (SegmentLog, LogCapture) {
        makeDirectory(dir.file(name))
        writeFile(dir.file(name + "/00000000000000000001.seg"), bytes)
        let capture = LogCapture()
        return (try SegmentLog(directory: dir.file(name), logger: capture.logger), capture)
    }

    @Test func tornTailAtEveryOffsetOfTheLastRecord() throws {
        let dir = TemporaryDirectory("torn")
        let (pristine, lastStart) = try pristineSegment(in: dir)
        for cut in lastStart..<pristine.count {
            let (log, capture) = try open(Array(pristine[..<cut]), in: dir, name: "cut\(cut)")
            #expect(log.lastSeq == 4, "cut at \(cut)")
            #expect(try readAll(log) == records(1...4, size: 40))
            // A torn write whose bytes are all zeros (the first bytes of a record's length) reads
            // as reserved space: kept, overwritten by the next append.
            let torn = pristine[lastStart..<cut]
            let cutAway = torn.allSatisfy { $0 == 0 } ? 0 : torn.count
            #expect(log.statistics.bytesTruncatedAtRecovery == cutAway)
            #expect(fileSize(dir.file("cut\(cut)/00000000000000000001.seg")) == cut - cutAway)
            #expect(capture.contains(.warning, "truncating") == (cutAway > 0))
            // The log continues where it was cut.
            try log.append(records(5...6, size: 40))
            try log.commit()
            log.close()
            let reopened = try SegmentLog(directory: dir.file("cut\(cut)"), logger: quietLogger)
            #expect(try readAll(reopened) == records(1...6, size: 40))
        }
    }

    @Test func garbageAfterTheLastRecordIsCut() throws {
        let dir = TemporaryDirectory("garbage")
        let (pristine, _) = try pristineSegment(in: dir)
        var generator = SeededRandom(seed: 42)
        let tails: [[UInt8]] = [
            (0..<3).map { _ in .random(in: 0...255, using: &generator) },
            (0..<500).map { _ in .random(in: 0...255, using: &generator) },
            [UInt8](repeating: 0, count: 4090) + [7],  // a stray byte at the end of reserved space
        ]
        for (index, tail) in tails.enumerated() {
            let (log, capture) = try open(pristine + tail, in: dir, name: "g\(index)")
            #expect(try readAll(log) == records(1...5, size: 40))
            #expect(log.statistics.bytesTruncatedAtRecovery == tail.count)
            #expect(capture.contains(.warning, "truncating"))
        }
    }

    /// Zeros after the last record are space reserved for it and never written: kept, with no
    /// warning, and appends continue into them.
    @Test func reservedSpaceAfterTheLastRecordIsKept() throws {
        let dir = TemporaryDirectory("reserved")
        let (pristine, _) = try pristineSegment(in: dir)
        let (log, capture) = try open(pristine + [UInt8](repeating: 0, count: 4096), in: dir, name: "r")
        #expect(try readAll(log) == records(1...5, size: 40))
        #expect(log.statistics.bytesTruncatedAtRecovery == 0)
        #expect(!capture.contains(.warning, "truncating"))
        #expect(fileSize(dir.file("r/00000000000000000001.seg")) == pristine.count + 4096)
        try log.append(records(6...7, size: 40))
        try log.commit()
        log.close()
        #expect(try readAll(try SegmentLog(directory: dir.file("r"), logger: quietLogger)) == records(1...7, size: 40))
    }

    /// One byte that is not zero anywhere in the space after the last record (the last of a
    /// 1 MiB read, the first of the next, the file's last) makes it damage, not reserved space.
    @Test(arguments: [(1 << 20) - 1, 1 << 20, (3 << 20) - 1])
    func aByteThatIsNotZeroInTheReservedSpaceIsDamage(at position: Int) throws {
        let dir = TemporaryDirectory("stray")
        let (pristine, _) = try pristineSegment(in: dir)
        var tail = [UInt8](repeating: 0, count: 3 << 20)
        tail[position] = 7
        let (log, capture) = try open(pristine + tail, in: dir, name: "s")
        #expect(try readAll(log) == records(1...5, size: 40))
        #expect(log.statistics.bytesTruncatedAtRecovery == tail.count)
        #expect(capture.contains(.warning, "truncating"))
    }

    @Test(arguments: [0, 3, 4, 7, 8, 15, 16, 40, 55])
    func flippedBitInTheLastRecordDropsOnlyIt(offsetInRecord: Int) throws {
        let dir = TemporaryDirectory("flip")
        let (pristine, lastStart) = try pristineSegment(in: dir)
        var damaged = pristine
        damaged[lastStart + offsetInRecord] ^= offsetInRecord == 0 ? 0x80 : 0x01
        let (log, _) = try open(damaged, in: dir, name: "flip")
        #expect(log.lastSeq == 4)
        #expect(try readAll(log) == records(1...4, size: 40))
    }

    @Test func damageInTheMiddleOfTheLastSegmentCutsAndSaysSo() throws {
        let dir = TemporaryDirectory("midlast")
        let (pristine, _) = try pristineSegment(in: dir)
        var damaged = pristine
        damaged[32 + 56 + 20] ^= 0x10  // payload of record 2
        let (log, capture) = try open(damaged, in: dir, name: "mid")
        #expect(log.lastSeq == 1)
        #expect(capture.contains(.error, "valid-looking records follow"))
    }

    @Test func damageInAnEarlierSegmentRefusesToOpen() throws {
        let dir = TemporaryDirectory("middle")
        let options = SegmentLog.Options(segmentBytes: 2048)
        do {
            let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
            try log.append(records(1...200, size: 40))
            try log.commit()
        }
        let files = segmentFiles(in: dir.path)
        #expect(files.count > 2)
        let second = dir.file(files[1])
        let before = readFile(second)
        flipBit(in: second, at: 32 + 56 * 3 + 30)
        let error = #expect(throws: LogError.self) { try SegmentLog(directory: dir.path, options: options, logger: quietLogger) }
        #expect(error?.code == .corrupt)
        #expect(error?.path == second)
        #expect(error?.message.contains("not the last segment") == true)
        var flipped = before
        flipped[32 + 56 * 3 + 30] ^= 1
        #expect(readFile(second) == flipped, "nothing was truncated")

        // A damaged header of a segment with records is refused too.
        writeFile(second, before)
        flipBit(in: second, at: 3)
        let header = #expect(throws: LogError.self) { try SegmentLog(directory: dir.path, options: options, logger: quietLogger) }
        #expect(header?.code == .corrupt && header?.message.contains("bad magic") == true)

        // So is a missing segment in the middle.
        writeFile(second, before)
        removeTree(second)
        let gap = #expect(throws: LogError.self) { try SegmentLog(directory: dir.path, options: options, logger: quietLogger) }
        #expect(gap?.code == .corrupt && gap?.message.contains("not contiguous") == true)
    }

    @Test func halfCreatedLastSegmentIsRemoved() throws {
        let dir = TemporaryDirectory("halfcreated")
        do {
            let log = try SegmentLog(directory: dir.path, logger: quietLogger)
            try log.append(records(1...10))
            try log.commit()
        }
        // A crash after creating the next segment file but before its header reached the disk.
        writeFile(dir.file("00000000000000000011.seg"), [UInt8](repeating: 0, count: 20))
        let capture = LogCapture()
        let log = try SegmentLog(directory: dir.path, logger: capture.logger)
        #expect(log.lastSeq == 10 && log.nextSeq == 11)
        #expect(segmentFiles(in: dir.path) == ["00000000000000000001.seg"])
        #expect(capture.contains(.warning, "half-created"))
        try log.append(records(11...12))
        try log.commit()
        #expect(try readAll(log) == records(1...12))
    }

    @Test func emptyLastSegmentKeepsThePosition() throws {
        let dir = TemporaryDirectory("emptylast")
        let options = SegmentLog.Options(segmentBytes: 1024)
        do {
            let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
            try log.append(records(1...30, size: 40))
            try log.commit()
        }
        let files = segmentFiles(in: dir.path)
        let last = dir.file(files.last!)
        let firstSeqOfLast = UInt64(files.last!.dropLast(4))!
        truncateFile(last, to: 32)  // only the header survived
        let log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        #expect(log.nextSeq == firstSeqOfLast && log.lastSeq == firstSeqOfLast - 1)
        #expect(try readAll(log) == records(1...(firstSeqOfLast - 1), size: 40))
    }
}
