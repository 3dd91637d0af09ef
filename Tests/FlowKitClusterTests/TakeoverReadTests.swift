import FlowKit
import FlowKitExamples
import Foundation
import FlowKitLog
import Logging
import Synchronization
import Testing

@_spi(Wire) @testable import FlowKitCluster

/// What a coordinator that starts leading reads of its log: only what its replica has not applied.
/// Every ``EntryLog`` keeps the epochs of what it holds as it is written, cut and reset (a log on
/// disk learns them again when it opens), and the replica's sessions know the submissions it applied.
@Suite struct TakeoverReadTests {
    private static func records(_ seqs: ClosedRange<UInt64>, epoch: UInt32) -> [(seq: UInt64, record: [UInt8])] {
        seqs.map { seq in
            let entry = Entry(
                seq: seq, epoch: epoch, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
                address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8)
            )
            return (seq, entry.encoded)
        }
    }

    /// The epochs a log's entries say, read one by one: what the log must keep without reading them.
    private static func read(_ log: any EntryLog) throws -> EpochHistory {
        var history = EpochHistory()
        for record in try log.read(from: log.firstSeq, maxCount: .max, maxBytes: .max) {
            history.note(seq: Entry.peekSeq(record) ?? 0, epoch: Entry.peekEpoch(record) ?? 0)
        }
        return history
    }

    /// The same writes, cuts and reset on a log: its epochs match its entries' after each.
    private static func exercise(_ log: any EntryLog, reopen: () throws -> any EntryLog) throws {
        try log.append(records(1...4, epoch: 1) + records(5...9, epoch: 2))
        try log.commit()
        #expect(log.epochs.epoch(of: 4) == 1 && log.epochs.epoch(of: 5) == 2)
        #expect(log.epochs == (try read(log)))
        // A deposed leader's tail cut, and the next leader's entries after it.
        try log.removeSuffix(after: 6)
        try log.append(records(7...8, epoch: 3))
        try log.commit()
        #expect(log.epochs.epoch(of: 7) == 3 && log.epochs.end(ofEpochAtMost: 2, logEnd: log.lastSeq) == 6)
        #expect(log.epochs == (try read(log)))
        let reopened = try reopen()
        #expect(reopened.epochs == log.epochs)
        // A snapshot installed: the log starts again, with no epochs until entries come.
        try reopened.reset(after: 20)
        #expect(reopened.epochs == EpochHistory())
        try reopened.append(records(21...21, epoch: 4))
        try reopened.commit()
        #expect(reopened.epochs.epoch(of: 21) == 4 && reopened.epochs.epoch(of: 20) == nil)
    }

    @Test func theLogInMemoryKeepsItsEpochs() throws {
        let log = MemoryEntryLog()
        try Self.exercise(log) { log }
    }

    @Test func theLogOnDiskKeepsItsEpochsAndLearnsThemWhenItOpens() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entry-log-epochs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        // Small segments: the epochs are learnt across several files.
        let options = SegmentLog.Options(segmentBytes: 4_096, preallocate: false)
        var first: DurableEntryLog? = try DurableEntryLog(directory: directory, options: options, logger: logger)
        try Self.exercise(first!) {
            first?.close()
            first = nil
            return try DurableEntryLog(directory: directory, options: options, logger: logger)
        }
    }

    /// Where a log ends, as a standby's copy starts from it: a log started again after a snapshot
    /// ends at the snapshot's seq, in an epoch it does not know (0), also once reopened; the leader
    /// takes that as agreeing (``FetchAnswer``).
    @Test func aLogStartedAgainAfterASnapshotEndsThereAcrossARestart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entry-log-end-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let options = SegmentLog.Options(segmentBytes: 4_096, preallocate: false)
        var log: DurableEntryLog? = try DurableEntryLog(directory: directory, options: options, logger: logger)
        #expect(try log!.end() == (0, 0))
        try log!.append(Self.records(1...4, epoch: 2))
        try log!.commit()
        #expect(try log!.end() == (4, 2))
        try log!.reset(after: 524)
        #expect(try log!.end() == (524, 0))
        log!.close()
        log = try DurableEntryLog(directory: directory, options: options, logger: logger)
        #expect(try log!.end() == (524, 0))
        try log!.append(Self.records(525...525, epoch: 3))
        try log!.commit()
        #expect(try log!.end() == (525, 3))
        log!.close()
    }

    /// A commit that fails rolls the log back to the last commit, and its epochs with it.
    @Test func aFailedCommitForgetsTheEpochsItAppended() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("entry-log-epochs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let failing = Atomic<Bool>(false)
        let faults = FaultInjection { operation in
            guard failing.load(ordering: .relaxed), case .write = operation.kind else { return nil }
            return .init(errno: ENOSPC)
        }
        let log = try DurableEntryLog(
            directory: directory, options: SegmentLog.Options(preallocate: false, faultInjection: faults), logger: Logger(label: "test")
        )
        try log.append(Self.records(1...3, epoch: 1))
        try log.commit()
        failing.store(true, ordering: .relaxed)
        try log.append(Self.records(4...5, epoch: 2))
        #expect(throws: LogError.self) { try log.commit() }
        #expect(log.lastSeq == 3 && log.epochs.epoch(of: 5) == 1)
        failing.store(false, ordering: .relaxed)
        try log.append(Self.records(4...4, epoch: 3))
        try log.commit()
        #expect(log.epochs == (try Self.read(log)))
        log.close()
    }

    /// The replica's sessions know what it applied: a new leader reads from the next seq; after a
    /// snapshot that kept no sessions (written before snapshots kept them), from the log's start.
    @Test func aNewLeaderReadsOnlyWhatItsReplicaHasNotApplied() async throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: Logger(label: "test"))
        #expect(await replica.firstUnlearned(inLogFrom: 1) == 1)
        let entries = try Self.records(1...40, epoch: 1).map { try Entry(decoding: $0.record) }
        await replica.applyNow(entries)
        #expect(await replica.firstUnlearned(inLogFrom: 1) == 41)
        let (seq, instances, sessions) = await replica.snapshot()
        #expect(!sessions.isEmpty)
        try await replica.restore(seq: seq, instances: instances, sessions: sessions)
        #expect(await replica.firstUnlearned(inLogFrom: 30) == 41)
        try await replica.restore(seq: seq, instances: instances, sessions: [])
        #expect(await replica.firstUnlearned(inLogFrom: 30) == 30, "a snapshot without sessions: the log teaches them")
    }
}
