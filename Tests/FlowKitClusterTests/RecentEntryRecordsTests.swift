import Foundation
import FlowKitLog
import Logging
import Synchronization
import Testing

@_spi(Wire) @testable import FlowKitCluster

/// The log's newest records in memory, which a coordinator's replica applies from: always what the
/// log holds at those seqs, through appends, failed commits, cuts and resets.
@Suite struct RecentEntryRecordsTests {
    private static func records(_ seqs: ClosedRange<UInt64>, epoch: UInt32, padding: Int = 0) -> [(seq: UInt64, record: [UInt8])] {
        seqs.map { seq in
            let entry = Entry(
                seq: seq, epoch: epoch, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
                address: "counter/\(String(repeating: "a", count: padding))", payload: Array(#"{"increment":{}}"#.utf8)
            )
            return (seq, entry.encoded)
        }
    }

    @Test func theNewestRecordsStayWithinTheirBytes() throws {
        let group = Self.records(1...3, epoch: 1)
        let size = group[0].record.count
        let recent = RecentEntryRecords(maxBytes: size * 4)
        #expect(recent.read(from: 1, maxCount: 10, maxBytes: .max) == nil, "nothing written yet")
        recent.append(group)
        #expect(recent.read(from: 1, maxCount: 10, maxBytes: .max) == group.map(\.record))
        recent.append(Self.records(4...6, epoch: 1))
        // Six records of four records' bytes: the two oldest went.
        #expect(recent.read(from: 2, maxCount: 10, maxBytes: .max) == nil)
        #expect(recent.read(from: 3, maxCount: 10, maxBytes: .max)?.count == 4)
        #expect(recent.read(from: 7, maxCount: 10, maxBytes: .max) == nil, "not written yet")
        #expect(recent.read(from: 3, maxCount: 2, maxBytes: .max)?.count == 2)
        #expect(recent.read(from: 3, maxCount: 10, maxBytes: size * 2 + 1)?.count == 2)
        #expect(recent.read(from: 3, maxCount: 10, maxBytes: 1)?.count == 1, "at least one")
        // A group larger than the bound stays whole: it is the newest.
        let large = Self.records(7...12, epoch: 1)
        recent.append(large)
        #expect(recent.read(from: 7, maxCount: 10, maxBytes: .max) == large.map(\.record))
        #expect(recent.read(from: 6, maxCount: 10, maxBytes: .max) == nil)
        // Cut, then written again in another epoch: the new records, not the cut ones.
        recent.cut(after: 9)
        #expect(recent.read(from: 10, maxCount: 10, maxBytes: .max) == nil)
        let rewritten = Self.records(10...10, epoch: 2)
        recent.append(rewritten)
        #expect(recent.read(from: 9, maxCount: 10, maxBytes: .max) == [large[2].record, rewritten[0].record])
        // Records that do not continue what is held replace it.
        recent.append(Self.records(40...40, epoch: 2))
        #expect(recent.read(from: 10, maxCount: 10, maxBytes: .max) == nil)
        #expect(recent.read(from: 40, maxCount: 10, maxBytes: .max)?.count == 1)
        recent.clear()
        #expect(recent.read(from: 40, maxCount: 10, maxBytes: .max) == nil)
    }

    /// Random appends (some of whose commits fail), cuts and resets on a log on disk: after each,
    /// every seq the recent records hold reads as the log's own record, the newest written is
    /// among them, and a replica's pass reads the same from either.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func theLogOnDiskKeepsItsRecentRecordsInStep(seed: UInt64) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recent-records-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let failing = Atomic<Bool>(false)
        let faults = FaultInjection { operation in
            guard failing.load(ordering: .relaxed), case .write = operation.kind else { return nil }
            return .init(errno: ENOSPC)
        }
        let options = SegmentLog.Options(segmentBytes: 8_192, preallocate: false, faultInjection: faults)
        let log = try DurableEntryLog(directory: directory, options: options, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { log.close() }
        var random = SeededRandom(seed: seed)
        var epoch: UInt32 = 1
        var (appends, failed, cuts, resets) = (0, 0, 0, 0)
        for _ in 0..<300 {
            switch random.next() % 10 {
            case 0..<7:
                let count = 1 + random.next() % 40
                let fails = random.next() % 8 == 0
                failing.store(fails, ordering: .relaxed)
                do {
                    try log.append(Self.records(log.lastSeq + 1...log.lastSeq + count, epoch: epoch, padding: Int(random.next() % 64)))
                    try log.commit()
                    appends += 1
                    #expect(fails == false)
                    #expect(log.recent.read(from: log.lastSeq, maxCount: 1, maxBytes: .max) != nil, "the newest written is held")
                } catch {
                    #expect(fails)
                    failed += 1
                }
                failing.store(false, ordering: .relaxed)
            case 7, 8:
                guard log.lastSeq > log.firstSeq else { continue }
                try log.removeSuffix(after: log.lastSeq - 1 - random.next() % min(30, log.lastSeq - log.firstSeq))
                epoch += 1
                cuts += 1
            default:
                try log.reset(after: log.lastSeq + random.next() % 5)
                resets += 1
            }
            for seq in log.firstSeq...max(log.firstSeq, log.lastSeq) where seq <= log.lastSeq {
                if let held = log.recent.read(from: seq, maxCount: 1, maxBytes: .max) {
                    #expect(held == (try log.read(from: seq, maxCount: 1, maxBytes: .max)), "seq \(seq)")
                }
            }
            if log.lastSeq >= log.firstSeq {
                let from = log.firstSeq + random.next() % (log.lastSeq - log.firstSeq + 1)
                #expect(try log.readPass(from: from) == log.read(from: from, maxCount: RecentEntryRecords.passCount, maxBytes: RecentEntryRecords.passBytes))
            }
        }
        #expect(appends > 100 && failed > 5 && cuts > 20 && resets > 10)
    }
}
