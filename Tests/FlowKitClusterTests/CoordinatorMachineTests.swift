@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Logging
import Testing
import ZeroMQ

/// The coordinator without sockets or a disk: messages in, actions out, the log's outcome in.
@Suite struct CoordinatorMachineTests {
    let node = RouterEnvelope(identity: [1, 2, 3], delimited: false)

    func machine(head: UInt64 = 0) -> CoordinatorMachine {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        var configuration = CoordinatorConfiguration()
        configuration.nodeTimeout = .seconds(2)
        return CoordinatorMachine(
            configuration: configuration,
            registry: registry,
            sequencer: Sequencer(epoch: 5, durableHead: head),
            firstSeq: 1,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
            counters: ClusterCounters(),
            now: 0
        )
    }

    /// A message as the ROUTER socket reads it from `peer`.
    func fromNode(_ frames: [[UInt8]], peer: RouterEnvelope? = nil) -> Message {
        Message(parts: [(peer ?? node).identity] + frames)
    }

    func submit(_ ids: ClosedRange<UInt64>) -> Message {
        let submissions = ids.map {
            Submission(submission: $0, kind: .event, codec: .json, submittedAt: 0, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8))
        }
        return fromNode(SubmitMessage(origin: 1, session: 7, submissions: submissions).frames)
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
        var machine = machine(head: 41)
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
        var machine = machine()
        let hello = HelloMessage(node: 2, session: 9, info: NodeInfo(name: "node-2", clientEndpoint: "tcp://127.0.0.1:2", flows: ["counter"], pid: 2))
        _ = machine.receive([fromNode(hello.frames)], now: 0)
        let status = machine.status(now: 3_000_000, changedDigests: [:], instances: 0)
        let published = status.compactMap { if case .publish(let frames, 0) = $0 { frames } else { nil } }
        let alarms = published.compactMap { try? AlarmMessage(frames: $0).alarm }
        #expect(alarms.map(\.kind) == [.nodeDown])
        let last = try ClusterStatusMessage(frames: try #require(published.last)).status
        #expect(last.nodes.map(\.alive) == [false])
    }
}
