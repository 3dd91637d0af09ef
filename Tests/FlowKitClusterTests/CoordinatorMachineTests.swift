@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Logging
import Testing
import ZeroMQ

/// The coordinator without sockets or a disk: messages in, actions out, the log's outcome in.
@Suite struct CoordinatorMachineTests {
    let node = RouterEnvelope(identity: [1, 2, 3], delimited: false)

    /// A coordinator machine; `greeted`: node 1 (session 7) has said HELLO from ``node``.
    func machine(head: UInt64 = 0, replication: ReplicationProgress? = nil, greeted: Bool = true) -> CoordinatorMachine {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        var configuration = CoordinatorConfiguration()
        configuration.nodeTimeout = .seconds(2)
        var machine = CoordinatorMachine(
            configuration: configuration,
            registry: registry,
            sequencer: Sequencer(epoch: 5, durableHead: head),
            firstSeq: 1,
            now: 0,
            replication: replication
        )
        if greeted { _ = machine.receive([hello(node: 1, session: 7)], now: 0) }
        return machine
    }

    func hello(node id: UInt32, session: UInt64, from peer: RouterEnvelope? = nil, ackOrdered: Bool? = nil) -> Message {
        let info = NodeInfo(name: "node-\(id)", clientEndpoint: "tcp://127.0.0.1:\(id)", flows: ["counter"], pid: 1, ackOrdered: ackOrdered)
        return fromNode(HelloMessage(node: id, session: session, info: info).frames, peer: peer)
    }

    /// Leading c2 and c3, all three in sync, everything up to `head` committed.
    func leader(head: UInt64 = 0) -> CoordinatorMachine {
        machine(
            head: head,
            replication: ReplicationProgress(
                leader: "c1", members: ["c1", "c2", "c3"], eligible: ["c1", "c2", "c3"], written: head, committed: head,
                minInSync: 2, lagTimeout: 1_000_000, now: 0
            )
        )
    }

    func fetch(_ id: String, durable: UInt64, lastEpoch: UInt32 = 5) -> FetchRequest {
        FetchRequest(request: 1, epoch: 5, durable: durable, end: durable, endEpoch: durable == 0 ? 0 : lastEpoch, maxBytes: 1 << 20, id: id)
    }

    func told(_ actions: [CoordinatorMachine.Action]) -> Bool {
        actions.contains { action in
            switch action {
            case .reply, .publish, .replicate: true
            default: false
            }
        }
    }

    @Test func aReplicatedGroupIsToldOnlyOnceEveryInSyncCoordinatorHoldsIt() throws {
        var machine = leader()
        let group = try commit(in: machine.receive([submit(1...3)], now: 10))
        // The local log holds it: nobody hears of it yet.
        #expect(!told(machine.committed(group, now: 20)))
        #expect(machine.durableHead == 3 && machine.committedHead == 0)
        // c2's FETCH from 0: it gets entries from 1, and holds nothing yet.
        let (first, none) = try machine.fetch(fetch("c2", durable: 0), firstSeq: 1, now: 21)
        #expect(first == .entries(from: 1) && none.isEmpty)
        // c2 then c3 hold all three: the second completes the set.
        let c2Holds = try machine.fetch(fetch("c2", durable: 3), firstSeq: 1, now: 22).1
        #expect(!told(c2Holds))
        let (answer, released) = try machine.fetch(fetch("c3", durable: 3), firstSeq: 1, now: 23)
        #expect(answer == .wait && machine.committedHead == 3)
        let acks = try self.acks(in: released)
        #expect(acks.map { $0.acks.map(\.seq) } == [[1, 2, 3]] && acks.first?.head == 3)
        #expect(released.contains { if case .publish(_, 3) = $0 { true } else { false } })
        // What nodes see is the commit point.
        let heartbeat = machine.heartbeat(now: 24)
        let frames = try #require({ if case .publish(let frames, 0) = heartbeat { frames } else { nil } }(), "a heartbeat is a publication")
        #expect(try HeartbeatMessage(frames: frames).head == 3)
    }

    /// The standbys are sent a group while the leader syncs it: their copies may be durable
    /// first, and the commit waits for the leader's own sync too.
    @Test func aGroupGoesToTheStandbysWhileTheLeaderSyncsItAndCommitsAfterBoth() throws {
        var machine = leader()
        let group = try commit(in: machine.receive([submit(1...3)], now: 10))
        #expect(machine.offeredHead == 3 && machine.durableHead == 0)
        // Asked for while the leader syncs: the answer holds the group.
        let (answer, _) = try machine.fetch(fetch("c2", durable: 0), firstSeq: 1, now: 11)
        #expect(answer == .entries(from: 1))
        // Both standbys hold it durably before the leader does: nothing is told yet.
        #expect(!told(try machine.fetch(fetch("c2", durable: 3), firstSeq: 1, now: 12).1))
        #expect(!told(try machine.fetch(fetch("c3", durable: 3), firstSeq: 1, now: 13).1))
        #expect(machine.committedHead == 0)
        // The leader's sync finishes: committed, with nothing more from the standbys.
        let done = machine.committed(group, now: 14)
        #expect(try acks(in: done).flatMap(\.acks).map(\.seq) == [1, 2, 3])
        #expect(machine.committedHead == 3)
    }

    /// A replicated leader whose own sync fails after the group went out steps down, and never
    /// gives its seqs to other entries; a coordinator alone rolls them back (the test after next).
    @Test func aLeaderWhoseSyncFailsAfterSendingTheGroupStepsDown() throws {
        var machine = leader()
        let group = try commit(in: machine.receive([submit(1...2)], now: 10))
        struct EIO: Error {}
        let failed = machine.failed(group, error: LeaderSyncFailed(cause: EIO()), now: 11)
        #expect(failed.count == 1)
        #expect({ if case .stepDown(let reason) = failed.first { reason.contains("seqs 1…2") } else { false } }())
        #expect(!told(failed), "nothing refused or acknowledged: the next leader's log decides")
        #expect(machine.hasSteppedDown)
        // It orders nothing more.
        #expect(machine.receive([submit(3...4)], now: 12).allSatisfy { if case .commit = $0 { false } else { true } })
    }

    @Test func aStandbyThatDisagreesDoesNotCountAndADuplicateWaitsForTheCommitPoint() throws {
        var machine = leader(head: 0)
        _ = machine.committed(try commit(in: machine.receive([submit(1...2)], now: 10)), now: 11)
        // c2 claims seq 2 of epoch 4, which this log ordered in epoch 5: it is told to cut back.
        let (answer, actions) = try machine.fetch(fetch("c2", durable: 2, lastEpoch: 4), firstSeq: 1, now: 12)
        #expect(answer == .truncate(keep: 0) && actions.isEmpty)
        _ = try machine.fetch(fetch("c3", durable: 2), firstSeq: 1, now: 13)
        #expect(machine.committedHead == 0)
        // The node retries submission 2 (its ACK is not out): a duplicate of an entry not yet
        // committed is acknowledged with the next group, once the commit point passes it.
        // Another term's FETCH is refused.
        #expect(throws: ProtocolError.self) {
            try machine.fetch(FetchRequest(request: 1, epoch: 6, durable: 0, end: 0, endEpoch: 0, maxBytes: 1, id: "c3"), firstSeq: 1, now: 14)
        }
        let retry = machine.receive([submit(2...2)], now: 14)
        #expect(try acks(in: retry).isEmpty)
        let duplicateGroup = try commit(in: retry)
        #expect(!told(machine.committed(duplicateGroup, now: 15)))
        let released = try machine.fetch(fetch("c2", durable: 2), firstSeq: 1, now: 16).1
        let acks = try self.acks(in: released)
        #expect(acks.flatMap(\.acks).map(\.seq) == [1, 2, 2])
        #expect(acks.flatMap(\.acks).last?.status == .duplicate)
    }

    @Test func aLaggingStandbyIsProposedOutAndCommitsResumeOnceTheSetIsWritten() throws {
        var machine = leader()
        _ = machine.committed(try commit(in: machine.receive([submit(1...1)], now: 10)), now: 11)
        _ = try machine.fetch(fetch("c2", durable: 1), firstSeq: 1, now: 12)
        #expect(machine.committedHead == 0)
        let early = machine.tickReplication(now: 500_000)
        #expect(early.isEmpty)
        let proposed = machine.tickReplication(now: 1_500_000)
        guard case .proposeEligible(let set)? = proposed.first else {
            Issue.record("expected a proposal, got \(proposed)")
            return
        }
        #expect(set == ["c1", "c2"])
        let released = machine.eligibleWritten(set, now: 1_500_001)
        #expect(try acks(in: released).flatMap(\.acks).map(\.seq) == [1] && machine.committedHead == 1)
    }


    /// A message as the ROUTER socket reads it from `peer`.
    func fromNode(_ frames: [[UInt8]], peer: RouterEnvelope? = nil) -> Message {
        Message(parts: [(peer ?? node).identity] + frames)
    }

    func submit(_ ids: ClosedRange<UInt64>, origin: UInt32 = 1, session: UInt64 = 7, from peer: RouterEnvelope? = nil) -> Message {
        let submissions = ids.map {
            Submission(submission: $0, kind: .event, codec: .json, submittedAt: 0, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8))
        }
        return fromNode(SubmitMessage(origin: origin, session: session, submissions: submissions).frames, peer: peer)
    }

    /// The one commit among `actions`.
    func commit(in actions: [CoordinatorMachine.Action], sourceLocation: SourceLocation = #_sourceLocation) throws -> PendingCommit {
        let groups = actions.compactMap { if case .commit(let group) = $0 { group } else { nil } }
        #expect(groups.count == 1, sourceLocation: sourceLocation)
        return try #require(groups.first, sourceLocation: sourceLocation)
    }

    func acks(in actions: [CoordinatorMachine.Action]) throws -> [AckMessage] {
        try actions.compactMap { action in
            guard case .reply(let frames, _) = action, (try? WireHeader.read(frames[0], expecting: .ack)) != nil else { return nil }
            return try AckMessage(frames: frames)
        }
    }

    @Test func aHelloIsWelcomedWithTheTermAndTheHead() throws {
        var machine = machine(head: 41, greeted: false)
        let hello = HelloMessage(node: 1, session: 7, info: NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:1", flows: ["counter"], pid: 1))
        let actions = machine.receive([fromNode(hello.frames)], now: 10)
        guard case .reply(let frames, let peer)? = actions.first, actions.count == 1 else {
            Issue.record("expected one reply, got \(actions)")
            return
        }
        let welcome = try WelcomeMessage(frames: frames)
        #expect(peer == node && welcome.epoch == 5 && welcome.head == 41)
        #expect(machine.status(now: 10).nodes.map(\.name) == ["node-1"])
    }

    @Test func nothingIsAcknowledgedOrPublishedBeforeTheLogCommits() throws {
        var machine = machine()
        let received = machine.receive([submit(1...3)], now: 10)
        let group = try commit(in: received)
        #expect(received.count == 1, "only the commit: no ACK, no ENTRIES yet")
        #expect(group.entries.map(\.seq) == [1, 2, 3])

        let committed = machine.committed(group, now: 20)
        let acks = try self.acks(in: committed)
        #expect(acks.map { $0.acks.map(\.seq) } == [[1, 2, 3]])
        #expect(acks.first?.head == 3 && machine.durableHead == 3)
        let published = committed.compactMap { if case .publish(let frames, let count) = $0 { (frames, count) } else { nil } }
        #expect(published.map(\.1) == [3])
        #expect(try EntriesMessage(frames: published[0].0).entries.map(\.seq) == [1, 2, 3])
        #expect(committed.contains { if case .replicate(let entries) = $0 { entries.count == 3 } else { false } })
    }

    @Test func aNodeThatLearnsFromTheEntriesGetsNoAckForWhatWasOrdered() throws {
        var machine = machine(greeted: false)
        _ = machine.receive([hello(node: 1, session: 7, ackOrdered: false)], now: 1)
        let group = try commit(in: machine.receive([submit(1...2)], now: 2))
        let committed = machine.committed(group, now: 3)
        #expect(try acks(in: committed).isEmpty)
        #expect(committed.contains { if case .publish(_, 2) = $0 { true } else { false } }, "the entries tell it")
        // A retry is a duplicate, and that is acknowledged.
        #expect(try acks(in: machine.receive([submit(2...2)], now: 4)).flatMap(\.acks).map(\.status) == [.duplicate])
        // Another process of node 1, which did not say `ackOrdered: false`, is acknowledged.
        let restarted = RouterEnvelope(identity: [9], delimited: false)
        _ = machine.receive([hello(node: 1, session: 8, from: restarted)], now: 5)
        let next = try commit(in: machine.receive([submit(1...1, session: 8, from: restarted)], now: 5))
        #expect(try acks(in: machine.committed(next, now: 6)).flatMap(\.acks).map(\.seq) == [3])
    }

    @Test func oneCommitAtATimeWhatArrivesMeanwhileFormsTheNextGroup() throws {
        var machine = machine()
        let first = try commit(in: machine.receive([submit(1...2)], now: 1))
        // The log is still writing the first group: these wait.
        #expect(machine.receive([submit(3...3)], now: 2).isEmpty)
        #expect(machine.receive([submit(4...5)], now: 3).isEmpty)
        let second = try commit(in: machine.committed(first, now: 4))
        #expect(second.entries.map(\.seq) == [3, 4, 5])
        #expect(try acks(in: machine.committed(second, now: 5)).flatMap(\.acks).map(\.submission) == [3, 4, 5])
    }

    @Test func aRefusedCommitRefusesItsGroupAndRaisesOneAlarm() throws {
        var machine = machine()
        let group = try commit(in: machine.receive([submit(1...2)], now: 1_000))
        struct DiskFull: Error, CustomStringConvertible { var description: String { "no space left on device" } }
        let failed = machine.failed(group, error: DiskFull(), now: 1_001)
        let alarms = failed.compactMap { if case .publish(let frames, 0) = $0 { try? AlarmMessage(frames: frames).alarm } else { nil } }
        #expect(alarms.map(\.kind) == [.logUnavailable])
        #expect(try acks(in: failed).flatMap(\.acks).map(\.status) == [.refused, .refused])
        #expect(machine.durableHead == 0)
        // Refused at once while the log is given time; nothing to commit.
        let meanwhile = machine.receive([submit(3...3)], now: 1_002)
        #expect(try acks(in: meanwhile).flatMap(\.acks).map(\.reason) == [.internalError])
        let again = try commit(in: machine.receive([submit(1...1)], now: 1_000 + 600_000))
        #expect(machine.failed(again, error: DiskFull(), now: 1_600_002).allSatisfy { if case .publish = $0 { false } else { true } }, "one alarm per run of failures")
    }

    @Test func badInputGetsAnErrorAndLeavesTheOrderAlone() throws {
        var machine = machine()
        let actions = machine.receive([fromNode([[0xFF, 0x00]]), fromNode([])], now: 1)
        #expect(actions.count == 2)
        for action in actions {
            guard case .reply(let frames, _) = action else {
                Issue.record("expected an ERROR, got \(action)")
                continue
            }
            #expect(try ErrorReply(frames: frames).error.code != .internalError)
        }
        #expect(machine.durableHead == 0 && machine.intake.pending.isEmpty)
    }

    @Test func aNodeSilentForTheTimeoutIsAlarmedDownInTheNextStatus() throws {
        var machine = machine(greeted: false)
        let hello = HelloMessage(node: 2, session: 9, info: NodeInfo(name: "node-2", clientEndpoint: "tcp://127.0.0.1:2", flows: ["counter"], pid: 2))
        _ = machine.receive([fromNode(hello.frames)], now: 0)
        let status = machine.status(now: 3_000_000, instances: 0)
        let published = status.compactMap { if case .publish(let frames, 0) = $0 { frames } else { nil } }
        let alarms = published.compactMap { try? AlarmMessage(frames: $0).alarm }
        #expect(alarms.map(\.kind) == [.nodeDown])
        let last = try ClusterStatusMessage(frames: try #require(published.last)).status
        #expect(last.nodes.map(\.alive) == [false])
    }

    // MARK: Node identity

    func refusals(in actions: [CoordinatorMachine.Action]) throws -> [ProtocolError.Code?] {
        try acks(in: actions).flatMap(\.acks).map { $0.status == .refused ? $0.reason : nil }
    }

    func errors(in actions: [CoordinatorMachine.Action]) -> [ProtocolError.Code] {
        actions.compactMap { action in
            guard case .reply(let frames, _) = action else { return nil }
            return try? ErrorReply(frames: frames).error.code
        }
    }

    /// A SUBMIT speaks for the node its connection said HELLO as: one from a connection that said
    /// none is refused `helloFirst`, one naming another node or process `forbidden`, and nothing
    /// of either is ordered; the last HELLO of a node takes its identity to its new connection.
    @Test func aSubmitSpeaksOnlyForTheNodeItsConnectionSaidHelloAs() throws {
        var machine = machine(greeted: false)
        #expect(try refusals(in: machine.receive([submit(1...2)], now: 1)) == [.helloFirst, .helloFirst])

        let other = RouterEnvelope(identity: [7, 7], delimited: false)
        _ = machine.receive([hello(node: 2, session: 3, from: other)], now: 2)
        #expect(try refusals(in: machine.receive([submit(1...1, origin: 1, session: 7, from: other)], now: 3)) == [.forbidden])
        #expect(try refusals(in: machine.receive([submit(1...1, origin: 2, session: 4, from: other)], now: 3)) == [.forbidden])
        #expect(machine.intake.pending.isEmpty && machine.durableHead == 0)
        let own = try commit(in: machine.receive([submit(1...1, origin: 2, session: 3, from: other)], now: 4))
        #expect(own.entries.map(\.origin) == [2])
        _ = machine.committed(own, now: 5)

        // Node 1 says HELLO, then again on a new connection: the first no longer speaks for it.
        _ = machine.receive([hello(node: 1, session: 7)], now: 6)
        let moved = RouterEnvelope(identity: [8], delimited: false)
        _ = machine.receive([hello(node: 1, session: 7, from: moved)], now: 7)
        #expect(try refusals(in: machine.receive([submit(1...1)], now: 8)) == [.helloFirst])
        let fromNew = try commit(in: machine.receive([submit(1...1, from: moved)], now: 9))
        #expect(fromNew.entries.map(\.origin) == [1])

        // A connection speaks for one node: `other` saying HELLO as node 3 no longer speaks for 2.
        _ = machine.committed(fromNew, now: 10)
        _ = machine.receive([hello(node: 3, session: 1, from: other)], now: 11)
        #expect(try refusals(in: machine.receive([submit(2...2, origin: 2, session: 3, from: other)], now: 12)) == [.forbidden])
        #expect(machine.durableHead == 2)
    }

    /// A NODE_REPORT is taken only from the connection its node said HELLO on: from any other it
    /// is answered with an ERROR and not decoded, so it moves no progress and compares no digest.
    @Test func aReportIsTakenOnlyFromItsNodesConnection() throws {
        var machine = machine()
        let report = NodeReportMessage(node: 1, applied: 0, time: 1, report: NodeReport(
            name: "node-1", digest: "", digests: [:], instances: 0, runningEffects: 0, effectsLost: 0, pendingSubmissions: 0, connected: true
        )).frames
        let stranger = RouterEnvelope(identity: [4, 4], delimited: false)
        #expect(errors(in: machine.receive([fromNode(report, peer: stranger)], now: 1)) == [.helloFirst])
        _ = machine.receive([hello(node: 2, session: 1, from: stranger)], now: 2)
        let forged = machine.receive([fromNode(report, peer: stranger)], now: 3)
        #expect(errors(in: forged) == [.forbidden])
        #expect(!forged.contains { if case .decodeReport = $0 { true } else { false } })
        let own = machine.receive([fromNode(report)], now: 4)
        #expect(own.contains { if case .decodeReport = $0 { true } else { false } })
    }
}
