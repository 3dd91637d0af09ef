@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct SequencerTests {
    private func submission(_ id: UInt64) -> Submission {
        Submission(submission: id, kind: .event, codec: .json, submittedAt: 0, address: "counter/a", payload: [])
    }

    @Test func assignsConsecutiveSeqsAfterTheDurableHead() {
        var sequencer = Sequencer(epoch: 4, durableHead: 100)
        for id in 1...3 {
            guard case .ordered(let entry) = sequencer.order(submission(UInt64(id)), origin: 1, session: 1, now: 9) else {
                Issue.record("not ordered")
                return
            }
            #expect(entry.seq == 100 + UInt64(id))
            #expect(entry.epoch == 4)
            #expect(entry.committedAt == 9)
        }
    }

    @Test func retriesAreDuplicatesWithTheirOriginalSeq() {
        var sequencer = Sequencer(epoch: 1, durableHead: 0)
        _ = sequencer.order(submission(1), origin: 1, session: 1, now: 0)
        _ = sequencer.order(submission(2), origin: 1, session: 1, now: 0)
        #expect(sequencer.order(submission(1), origin: 1, session: 1, now: 0) == .duplicate(seq: 1, epoch: 1))
        // The same submission id from another session or origin is a different submission.
        guard case .ordered = sequencer.order(submission(1), origin: 1, session: 2, now: 0),
            case .ordered = sequencer.order(submission(1), origin: 2, session: 1, now: 0)
        else {
            Issue.record("a different session's submission was treated as a duplicate")
            return
        }
        #expect(sequencer.head == 4)
    }

    @Test func outOfOrderRetriesAfterAReconnectAreStillRecognised() {
        var sequencer = Sequencer(epoch: 1, durableHead: 0)
        // 3 and 4 arrive on a new connection before 1 and 2 are retried.
        _ = sequencer.order(submission(3), origin: 1, session: 1, now: 0)
        _ = sequencer.order(submission(4), origin: 1, session: 1, now: 0)
        guard case .ordered = sequencer.order(submission(1), origin: 1, session: 1, now: 0) else {
            Issue.record("submission 1 was lost")
            return
        }
        #expect(sequencer.order(submission(3), origin: 1, session: 1, now: 0) == .duplicate(seq: 1, epoch: 1))
    }

    @Test func aRollBackForgetsWhatWasNeverDurable() {
        var sequencer = Sequencer(epoch: 1, durableHead: 10)
        _ = sequencer.order(submission(1), origin: 1, session: 1, now: 0)
        sequencer.committed(through: 11)
        _ = sequencer.order(submission(2), origin: 1, session: 1, now: 0)
        _ = sequencer.order(submission(3), origin: 1, session: 1, now: 0)
        #expect(sequencer.rollBack() == 2)
        #expect(sequencer.head == 11)
        // The retried submissions are new again and get the same seqs.
        #expect(sequencer.order(submission(2), origin: 1, session: 1, now: 0) != .duplicate(seq: nil, epoch: nil))
        #expect(sequencer.head == 12)
        #expect(sequencer.order(submission(1), origin: 1, session: 1, now: 0) == .duplicate(seq: 11, epoch: 1))
    }

    @Test func theDedupWindowIsBoundedAndOldRetriesStayDuplicates() {
        var table = DedupTable(window: 100, maxSessions: 2)
        let key = DedupTable.SessionKey(origin: 1, session: 1)
        for id in 1...1_000 as ClosedRange<UInt64> { table.record(key, submission: id, seq: id) }
        #expect(table.lookup(key, submission: 1) == .duplicate(seq: nil))
        #expect(table.lookup(key, submission: 1_000) == .duplicate(seq: 1_000))
        #expect(table.lookup(key, submission: 1_001) == .new)
        // Beyond maxSessions, the least recently used session is forgotten.
        table.record(.init(origin: 2, session: 1), submission: 1, seq: 1)
        table.record(.init(origin: 3, session: 1), submission: 1, seq: 2)
        #expect(table.sessionCount == 2)
        #expect(table.lookup(key, submission: 1_000) == .new)
    }

    /// Submissions that arrive out of order or leave a gap are remembered while within the window
    /// (the ring grows to hold them); a gap the window has passed is a duplicate, and a rollback
    /// forgets what it undid.
    @Test func theDedupWindowHoldsGapsAndLateArrivalsUntilItPassesThem() {
        var table = DedupTable(window: 100, maxSessions: 4)
        let key = DedupTable.SessionKey(origin: 1, session: 9)
        for id in 1...50 as ClosedRange<UInt64> where id != 7 { table.record(key, submission: id, seq: id + 1_000) }
        table.record(key, submission: 90, seq: 2_000)  // ahead of the others
        #expect(table.lookup(key, submission: 7) == .new, "the gap is still open")
        #expect(table.lookup(key, submission: 6) == .duplicate(seq: 1_006))
        #expect(table.lookup(key, submission: 8) == .duplicate(seq: 1_008))
        #expect(table.lookup(key, submission: 90) == .duplicate(seq: 2_000))
        #expect(table.lookup(key, submission: 89) == .new)
        // A late arrival within the window closes the gap.
        table.record(key, submission: 7, seq: 3_000)
        #expect(table.lookup(key, submission: 7) == .duplicate(seq: 3_000))
        // Leave a gap at 60 and move 150 ids past it: the window no longer holds it.
        for id in 51...250 as ClosedRange<UInt64> where id != 60 && id != 90 { table.record(key, submission: id, seq: id + 1_000) }
        #expect(table.lookup(key, submission: 60) == .duplicate(seq: nil), "a retry that late is a duplicate")
        #expect(table.lookup(key, submission: 200) == .duplicate(seq: 1_200))
        #expect(table.lookup(key, submission: 251) == .new)
        // A rollback of everything ordered above seq 1,220 forgets those submissions.
        table.forget(above: 1_220)
        #expect(table.lookup(key, submission: 230) == .new)
        #expect(table.lookup(key, submission: 221) == .new)
        #expect(table.lookup(key, submission: 220) == .duplicate(seq: 1_220))
        table.record(key, submission: 221, seq: 1_221)
        #expect(table.lookup(key, submission: 221) == .duplicate(seq: 1_221))
        #expect(table.lookup(key, submission: 222) == .new)
    }

    /// A retry acknowledged after a restart names the epoch that ordered it, not the new one.
    @Test func aDuplicateNamesTheEpochThatOrderedIt() {
        let old = Entry(
            seq: 7, epoch: 3, kind: .event, codec: .json, origin: 1, session: 1, submission: 5, submittedAt: 0, committedAt: 0,
            address: "counter/a", payload: []
        )
        var history = EpochHistory()
        history.note(seq: 1, epoch: 3)
        var restarted = Sequencer(epoch: 4, durableHead: 7, history: history)
        restarted.recover(old)
        #expect(restarted.order(submission(5), origin: 1, session: 1, now: 0) == .duplicate(seq: 7, epoch: 3))
        guard case .ordered(let entry) = restarted.order(submission(6), origin: 1, session: 1, now: 0) else {
            Issue.record("not ordered")
            return
        }
        #expect(entry.epoch == 4)
        #expect(restarted.order(submission(6), origin: 1, session: 1, now: 0) == .duplicate(seq: 8, epoch: 4))
    }

    @Test func epochHistoryFindsTheEpochOfEverySeq() {
        var history = EpochHistory()
        for (seq, epoch) in [(1, 1), (2, 1), (5, 2), (9, 2), (10, 7)] as [(UInt64, UInt32)] { history.note(seq: seq, epoch: epoch) }
        #expect(history.epoch(of: 0) == nil)
        #expect(history.epoch(of: 1) == 1)
        #expect(history.epoch(of: 4) == 1)
        #expect(history.epoch(of: 5) == 2)
        #expect(history.epoch(of: 9) == 2)
        #expect(history.epoch(of: 10) == 7)
        #expect(history.epoch(of: 1_000) == 7)
    }

    /// A cut forgets the epochs of the entries it drops, so the next epoch's entries after it
    /// start a run of their own at the right seq.
    @Test func epochHistoryForgetsWhatACutDrops() {
        var history = EpochHistory()
        for (seq, epoch) in [(1, 1), (5, 2), (9, 3)] as [(UInt64, UInt32)] { history.note(seq: seq, epoch: epoch) }
        history.cut(after: 6)
        history.note(seq: 7, epoch: 4)
        #expect(history.epoch(of: 6) == 2)
        #expect(history.epoch(of: 7) == 4)
        #expect(history.epoch(of: 9) == 4)
        #expect(history.end(ofEpochAtMost: 3, logEnd: 12) == 6)
        history.cut(after: 0)
        #expect(history == EpochHistory())
    }
}
