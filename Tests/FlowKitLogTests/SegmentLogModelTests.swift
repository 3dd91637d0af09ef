import FlowKitCluster
import FlowKitLog
import FlowKitTools
import Testing

/// Random operations against an in-memory model: appends, commits, reads of random ranges
/// (exercising the sparse index), compaction and reopening, with small segments.
@Suite("SegmentLog model")
struct SegmentLogModelTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomOperationsMatchTheModel(seed: UInt64) throws {
        let dir = TemporaryDirectory("model")
        var random = SeededRandom(seed: seed)
        let options = SegmentLog.Options(
            segmentBytes: Int.random(in: 2_000...20_000, using: &random),
            indexIntervalBytes: Int.random(in: 1...2_000, using: &random),
            writeBufferBytes: Int.random(in: 100...10_000, using: &random)
        )
        var log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
        var committed: [UInt64: [UInt8]] = [:]  // the model: seq → payload
        var pending: [LogRecord] = []
        var first: UInt64 = 1
        var next: UInt64 = 1

        for step in 0..<600 {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40:
                let batch = (0..<Int.random(in: 1...30, using: &random)).map { offset in
                    let seq = next + UInt64(offset)
                    return LogRecord(seq: seq, payload: payload(for: seq, size: Int.random(in: 0...300, using: &random)))
                }
                try log.append(batch)
                pending += batch
                next += UInt64(batch.count)
            case 40..<60:
                try log.commit()
                for record in pending { committed[record.seq] = record.payload }
                pending.removeAll()
            case 60..<90:
                let last = first + UInt64(committed.count)  // one past the last committed seq
                let start = UInt64.random(in: first...(last + 2), using: &random)
                let maxCount = Int.random(in: 1...300, using: &random)
                let maxBytes = Int.random(in: 1...40_000, using: &random)
                let got = try log.read(from: start, maxCount: maxCount, maxBytes: maxBytes)
                var expected: [LogRecord] = []
                var bytes = 0
                var seq = start
                while let payload = committed[seq], expected.count < maxCount {
                    if !expected.isEmpty && bytes + payload.count > maxBytes { break }
                    expected.append(LogRecord(seq: seq, payload: payload))
                    bytes += payload.count
                    seq += 1
                }
                #expect(got == expected, "step \(step): read(from: \(start), maxCount: \(maxCount), maxBytes: \(maxBytes))")
            case 90..<95:
                let through = UInt64.random(in: first...(first + UInt64(committed.count) + 5), using: &random)
                let segmentsBefore = log.segmentCount
                let removed = try log.removePrefix(through: through)
                #expect(log.segmentCount == segmentsBefore - removed && log.segmentCount >= 1)
                let newFirst = log.firstSeq ?? first + UInt64(committed.count)
                #expect(newFirst >= first)
                if removed > 0 { #expect(newFirst <= through + 1, "step \(step): only whole segments at or before \(through)") }
                for seq in first..<newFirst { committed[seq] = nil }
                first = newFirst
                if newFirst > 1 {
                    let error = #expect(throws: LogError.self) { try log.read(from: newFirst - 1) }
                    #expect(error?.code == .compacted)
                }
            default:
                log.close()
                log = try SegmentLog(directory: dir.path, options: options, logger: quietLogger)
                // Records handed to the OS before the close may survive; they must be the pending ones.
                let last = log.lastSeq ?? (first - 1)
                #expect(last >= first + UInt64(committed.count) - 1 || committed.isEmpty)
                for record in pending where record.seq <= last { committed[record.seq] = record.payload }
                pending.removeAll()
                next = log.nextSeq ?? 1
                #expect(next == last + 1)
            }
        }
        try log.commit()
        for record in pending { committed[record.seq] = record.payload }
        let all = try readAll(log)
        #expect(all.count == committed.count)
        #expect(all.allSatisfy { committed[$0.seq] == $0.payload })
    }
}
