@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Testing

/// The coordinator's intake without sockets or a disk: room, admission, ordering, the pending
/// group, and what a refused commit does to it.
@Suite struct SubmissionIntakeTests {
    let nodeA = RouterEnvelope(identity: [1], delimited: false)
    let nodeB = RouterEnvelope(identity: [2], delimited: false)

    func intake(_ sequencer: Sequencer = Sequencer(epoch: 3, durableHead: 0), maxPending: Int = 100) -> SubmissionIntake {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        return SubmissionIntake(
            sequencer: sequencer,
            admission: Admission(registry: registry, limits: AdmissionLimits()),
            maxPendingEntries: maxPending,
            logRetryInterval: 500
        )
    }

    func submit(_ ids: ClosedRange<UInt64>, address: String = "counter/a", session: UInt64 = 9) -> SubmitMessage {
        let submissions = ids.map {
            Submission(submission: $0, kind: .event, codec: .json, submittedAt: 0, address: address, payload: Array(#"{"increment":{}}"#.utf8))
        }
        return SubmitMessage(origin: 1, session: session, submissions: submissions)
    }

    /// The group the intake hands to the log; there must be one.
    func takeGroup(_ intake: inout SubmissionIntake, sourceLocation: SourceLocation = #_sourceLocation) throws -> PendingCommit {
        let group = intake.takeGroup()
        return try #require(group, sourceLocation: sourceLocation)
    }

    @Test func orderedSubmissionsWaitForTheLogWithTheirAcknowledgements() throws {
        var intake = intake(Sequencer(epoch: 3, durableHead: 10))
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...3), from: nodeA, now: 7, answers: &answers)
        #expect(answers.immediate.isEmpty && answers.refusals.isEmpty)
        #expect(intake.durableHead == 10, "nothing is durable before the log says so")
        let group = try takeGroup(&intake)
        #expect(group.entries.map(\.seq) == [11, 12, 13])
        #expect(group.entries.allSatisfy { $0.epoch == 3 && $0.committedAt == 7 })
        #expect(group.acks.byPeer.count == 1)
        #expect(group.acks.byPeer[0].acks.map(\.seq) == [11, 12, 13])
        let next = intake.takeGroup()
        #expect(next == nil, "the intake starts a new group")
        let recovered = intake.committed(group)
        #expect(!recovered, "the log had not refused anything")
        #expect(intake.durableHead == 13)
    }

    @Test func whatAdmissionRefusesIsAnsweredAtOnceAndNotOrdered() {
        var intake = intake()
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...1, address: "nosuch/a"), from: nodeA, now: 1, answers: &answers)
        #expect(answers.refusals.map(\.code) == [.unknownFlow])
        #expect(answers.immediate.byPeer.first?.acks == [.init(submission: 1, seq: 0, status: .refused, reason: .unknownFlow)])
        let group = intake.takeGroup()
        #expect(group == nil)
    }

    @Test func aDuplicateOfADurableEntryIsAnsweredAtOnceUnderTheEpochThatOrderedIt() throws {
        var dedup = DedupTable()
        dedup.record(.init(origin: 1, session: 9), submission: 1, seq: 4)
        var history = EpochHistory()
        history.note(seq: 4, epoch: 2)
        var old = Sequencer(epoch: 3, durableHead: 4, dedup: dedup, history: history)
        old.recover(Entry(seq: 4, epoch: 2, kind: .event, codec: .json, origin: 1, session: 9, submission: 1, submittedAt: 0, committedAt: 0, address: "counter/a", payload: []))
        var intake = intake(old)
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...2), from: nodeA, now: 1, answers: &answers)
        #expect(answers.duplicates == 1)
        #expect(answers.immediate.byPeer.map(\.epoch) == [2])
        #expect(answers.immediate.byPeer.first?.acks == [.init(submission: 1, seq: 4, status: .duplicate)])
        // A retry of an entry still waiting for the log is acknowledged with its group.
        var more = SubmissionIntake.Answers()
        intake.take(submit(2...2), from: nodeA, now: 2, answers: &more)
        #expect(more.duplicates == 1 && more.immediate.isEmpty)
        let group = try takeGroup(&intake)
        #expect(group.entries.map(\.seq) == [5])
        #expect(group.acks.byPeer.first?.acks.map(\.status) == [.ordered, .duplicate])
    }

    @Test func acknowledgementsAreGatheredPerPeerAndEpoch() throws {
        var intake = intake()
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...2), from: nodeA, now: 1, answers: &answers)
        intake.take(submit(1...1, session: 10), from: nodeB, now: 1, answers: &answers)
        intake.take(submit(3...3), from: nodeA, now: 1, answers: &answers)
        let group = try takeGroup(&intake)
        #expect(group.acks.byPeer.map(\.peer) == [nodeA, nodeB])
        #expect(group.acks.byPeer.map { $0.acks.map(\.seq) } == [[1, 2, 4], [3]])
    }

    @Test func aNodeThatLearnsFromTheEntriesHearsOnlyOfDuplicatesAndRefusals() throws {
        var intake = intake(Sequencer(epoch: 3, durableHead: 0))
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...2), from: nodeA, acknowledgeOrdered: false, now: 1, answers: &answers)
        intake.take(submit(2...2), from: nodeA, acknowledgeOrdered: false, now: 1, answers: &answers)
        intake.take(submit(1...1, address: "nosuch/a", session: 10), from: nodeA, acknowledgeOrdered: false, now: 1, answers: &answers)
        #expect(answers.immediate.byPeer.flatMap(\.acks).map(\.status) == [.refused])
        let group = try takeGroup(&intake)
        #expect(group.entries.map(\.seq) == [1, 2])
        #expect(group.acks.byPeer.flatMap(\.acks) == [.init(submission: 2, seq: 2, status: .duplicate)], "the retry is a duplicate, told")
        #expect(group.unacknowledged.byPeer.flatMap(\.acks).map(\.seq) == [1, 2])

        // Should the log refuse the group, the node hears of every submission in it.
        struct DiskFull: Error {}
        let failure = intake.failed(group, error: DiskFull(), now: 2)
        #expect(failure.refused.byPeer.map(\.peer) == [nodeA])
        #expect(failure.refused.byPeer.flatMap(\.acks).map(\.submission) == [2, 1, 2])
        #expect(failure.refused.byPeer.flatMap(\.acks).allSatisfy { $0.status == .refused })
    }

    @Test func tooMuchWaitingForTheLogIsRefusedAsOverloaded() {
        var intake = intake(maxPending: 2)
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...3), from: nodeA, now: 1, answers: &answers)
        #expect(intake.pending.entries.count == 2)
        #expect(answers.refusals.map(\.code) == [.overloaded])
    }

    @Test func aRefusedCommitRollsBackRefusesItsGroupAndClosesTheIntakeForAWhile() throws {
        var intake = intake(Sequencer(epoch: 3, durableHead: 20))
        var answers = SubmissionIntake.Answers()
        intake.take(submit(1...2), from: nodeA, now: 1_000, answers: &answers)
        let group = try takeGroup(&intake)
        // Ordered while the group was being written: it never happens either.
        intake.take(submit(3...3), from: nodeB, now: 1_001, answers: &answers)
        struct DiskFull: Error {}
        let failure = intake.failed(group, error: DiskFull(), now: 1_002)
        #expect(failure.isFirst && failure.rolledBack == 3)
        #expect(failure.reason.code == .internalError)
        #expect(failure.refused.byPeer.map(\.peer) == [nodeA, nodeB])
        #expect(failure.refused.byPeer.flatMap(\.acks).allSatisfy { $0.status == .refused && $0.reason == .internalError })
        let rest = intake.takeGroup()
        #expect(rest == nil && intake.durableHead == 20)

        // Closed until the retry interval has passed; the same submissions are not duplicates.
        var closed = SubmissionIntake.Answers()
        intake.take(submit(1...1), from: nodeA, now: 1_400, answers: &closed)
        #expect(closed.refusals.map(\.message) == [failure.reason.message])
        var reopened = SubmissionIntake.Answers()
        intake.take(submit(1...1), from: nodeA, now: 1_502, answers: &reopened)
        let retried = try takeGroup(&intake)
        #expect(retried.entries.map(\.seq) == [21] && reopened.duplicates == 0)
        let second = intake.failed(retried, error: DiskFull(), now: 1_503)
        #expect(!second.isFirst, "still the same run of failures")

        var again = SubmissionIntake.Answers()
        intake.take(submit(1...1), from: nodeA, now: 2_100, answers: &again)
        let recovered = intake.committed(try takeGroup(&intake))
        #expect(recovered, "the log takes writes again")
        #expect(intake.logFailure == nil && intake.durableHead == 21)
    }
}

extension SubmissionIntakeTests {
    /// A new leader holds entries of the old term past the commit point: a retry of one is a
    /// duplicate acknowledged once committed, under the term that ordered it (the entry's own
    /// epoch, which EMITTED then reports), not the new leader's.
    @Test func aDuplicateNotYetCommittedIsAcknowledgedUnderTheTermThatOrderedIt() throws {
        var history = EpochHistory()
        history.note(seq: 1, epoch: 7)
        var sequencer = Sequencer(epoch: 8, durableHead: 5, history: history)
        for seq in 1...5 as ClosedRange<UInt64> {
            sequencer.recover(Entry(
                seq: seq, epoch: 7, kind: .event, codec: .json, origin: 1, session: 9, submission: seq, submittedAt: 0, committedAt: 0,
                address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8)
            ))
        }
        var intake = intake(sequencer)
        var answers = SubmissionIntake.Answers()
        // Committed through 3: entry 5 (submission 5) is in the log, not yet committed.
        intake.take(submit(5...5), from: nodeA, committed: 3, now: 1, answers: &answers)
        #expect(answers.immediate.isEmpty, "not acknowledged before it is committed")
        let group = try takeGroup(&intake)
        #expect(group.acks.byPeer.map(\.epoch) == [7], "acknowledged under epoch 7, which ordered seq 5")
        #expect(group.acks.byPeer.first?.acks == [.init(submission: 5, seq: 5, status: .duplicate)])
    }
}
