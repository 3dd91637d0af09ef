@_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Logging
import Testing
import ZeroMQ

/// A node without sockets or replicas: messages in, actions out.
@Suite struct NodeMachineTests {
    let client = RouterEnvelope(identity: [9], delimited: true)
    let second: UInt64 = 1_000_000
    let increment = Array(#"{"increment":{}}"#.utf8)

    static let coordinators = ["a", "b", "c"].map { CoordinatorEndpoints(submit: "inproc://\($0)s", publish: "inproc://\($0)p", sync: "inproc://\($0)y") }

    func machine(joinThroughSnapshot: Bool = false, replicated: Bool = false) -> NodeMachine {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        var configuration = NodeConfiguration(
            id: 1, coordinator: CoordinatorEndpoints(submit: "inproc://s", publish: "inproc://p", sync: "inproc://y"), name: "node-1"
        )
        configuration.joinThroughSnapshot = joinThroughSnapshot
        if replicated {
            configuration.coordinator = Self.coordinators[0]
            configuration.otherCoordinators = Array(Self.coordinators.dropFirst())
        }
        return NodeMachine(
            configuration: configuration, registry: registry, session: 77,
            info: NodeInfo(name: "node-1", clientEndpoint: "inproc://c", flows: ["counter"], pid: 1), now: 0
        )
    }

    /// The node is connected to a coordinator of epoch 3 whose head is `head`.
    func connected(head: UInt64 = 0, joinThroughSnapshot: Bool = false) -> NodeMachine {
        var machine = machine(joinThroughSnapshot: joinThroughSnapshot)
        _ = machine.receiveFromCoordinator([Message(parts: WelcomeMessage(epoch: 3, head: head, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100)).frames)], now: 1)
        return machine
    }

    func emit(_ request: UInt64, wait: WaitMode) -> Message {
        Message(parts: [client.identity, []] + ClientRequest.emit(request: request, wait: wait, codec: .json, address: "counter/a", payload: increment).frames)
    }

    func entry(_ seq: UInt64, submission: UInt64 = 0, origin: UInt32 = 2, session: UInt64 = 5) -> Entry {
        Entry(
            seq: seq, epoch: 3, kind: .event, codec: .json, origin: origin, session: session, submission: submission,
            submittedAt: 0, committedAt: 0, address: "counter/a", payload: increment
        )
    }

    func published(_ entries: [Entry]) -> Message {
        Message(parts: EntriesMessage(address: EntriesMessage.batchTopic, epoch: 3, entries: entries).frames)
    }

    func submitted(_ actions: [NodeMachine.Action]) throws -> [Submission] {
        try actions.flatMap { action -> [Submission] in
            guard case .submit(let frames) = action, (try? WireHeader.read(frames[0], expecting: .submit)) != nil else { return [] }
            return try SubmitMessage(frames: frames).submissions
        }
    }

    func syncRequests(_ actions: [NodeMachine.Action]) throws -> [SyncRequest] {
        try actions.compactMap { if case .requestSync(let frames) = $0 { try SyncRequest(frames: frames) } else { nil } }
    }

    /// The actions as words, for comparing sequences.
    func words(_ actions: [NodeMachine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .submit: "submit"
            case .requestSync: "sync"
            case .reply(.emitted(let request, let seq, _, let applied), _): "emitted \(request) at \(seq)\(applied ? " applied" : "")"
            case .reply(.error(let request, let error), _): "error \(request) \(error.code)"
            case .reply: "reply"
            case .apply(let entries): "apply \(entries.map(\.seq))"
            case .restore(let seq, _): "restore \(seq)"
            case .answerQuery(let request, _, _): "query \(request)"
            case .answerStatus(let request, _): "status \(request)"
            case .report: "report"
            case .switchCoordinator(let coordinator): "switch to \(coordinator.submit)"
            case .greetEveryCoordinator: "greet every coordinator"
            }
        }
    }

    @Test func itSaysHelloFirst() throws {
        var machine = machine()
        let actions = machine.start()
        guard case .submit(let frames)? = actions.first else {
            Issue.record("no HELLO")
            return
        }
        let hello = try HelloMessage(frames: frames)
        #expect(hello.node == 1 && hello.session == 77 && hello.info.name == "node-1")
    }

    @Test func anEmitIsSubmittedAndAnsweredOnceOrdered() throws {
        var machine = connected()
        let actions = machine.receiveFromClients([emit(4, wait: .ordered)], now: 10)
        let submissions = try submitted(actions)
        #expect(submissions.map(\.address) == ["counter/a"])
        let ack = AckMessage(epoch: 3, head: 1, acks: [.init(submission: submissions[0].submission, seq: 1, status: .ordered)])
        #expect(words(machine.receiveFromCoordinator([Message(parts: ack.frames)], now: 20)) == ["emitted 4 at 1"])
        // The ACK also tells of the head. The entry is being published at the same moment, so it
        // is asked for only if it has not arrived once the grace has passed.
        #expect(!words(machine.tick(now: 20 + 50_000)).contains("sync"))
        #expect(words(machine.tick(now: 20 + 100_000)).contains("sync"))
    }

    /// A coordinator that does not know this connection (it restarted, or the connection was
    /// made again) refuses with `helloFirst`: the node says HELLO and sends the submission again
    /// at once, on the same socket, HELLO first; the client hears only of its ordering. It asks
    /// again at most every 100 ms; a report refused so asks the same.
    @Test func askedForAHelloTheNodeSaysItAndResends() throws {
        var machine = connected()
        let submission = try submitted(machine.receiveFromClients([emit(7, wait: .ordered)], now: 10))[0]
        let refused = AckMessage(epoch: 3, head: 0, acks: [.init(submission: submission.submission, seq: 0, status: .refused, reason: .helloFirst)])
        let actions = machine.receiveFromCoordinator([Message(parts: refused.frames)], now: 20)
        #expect(words(actions) == ["submit", "submit"])
        let first = try #require(actions.first.flatMap { if case .submit(let frames) = $0 { frames } else { nil } }, "no HELLO first")
        #expect(try HelloMessage(frames: first).node == 1)
        #expect(try submitted(actions).map(\.submission) == [submission.submission])
        // Within 100 ms, a second refusal waits for the retry interval instead.
        #expect(machine.receiveFromCoordinator([Message(parts: refused.frames)], now: 50_000).isEmpty)
        let error = ErrorReply(request: 0, error: ProtocolError(.helloFirst, "say HELLO"))
        #expect(words(machine.receiveFromCoordinator([Message(parts: error.frames)], now: 200_000)) == ["submit", "submit"])
        let ordered = AckMessage(epoch: 3, head: 1, acks: [.init(submission: submission.submission, seq: 1, status: .ordered)])
        #expect(words(machine.receiveFromCoordinator([Message(parts: ordered.frames)], now: 300_000)) == ["emitted 7 at 1"])
    }

    @Test func aClientWaitingUntilAppliedHearsAfterTheEntryIsApplied() throws {
        var machine = connected()
        let submission = try submitted(machine.receiveFromClients([emit(5, wait: .applied)], now: 10))[0]
        let ack = AckMessage(epoch: 3, head: 1, acks: [.init(submission: submission.submission, seq: 1, status: .ordered)])
        #expect(machine.receiveFromCoordinator([Message(parts: ack.frames)], now: 20).isEmpty, "no answer yet")
        let own = entry(1, submission: submission.submission, origin: 1, session: 77)
        #expect(machine.isOwn(own) && !machine.isOwn(entry(1)))
        #expect(words(machine.receivePublished([published([own])], now: 30)) == ["apply [1]", "emitted 5 at 1 applied"])
    }

    @Test func itsOwnEntryPublishedBeforeItsAckAnswersTheClientAndTheAckChangesNothing() throws {
        var machine = connected()
        let submission = try submitted(machine.receiveFromClients([emit(6, wait: .ordered)], now: 10))[0]
        let own = entry(1, submission: submission.submission, origin: 1, session: 77)
        #expect(words(machine.receivePublished([published([own])], now: 20)) == ["apply [1]", "emitted 6 at 1 applied"])
        let ack = AckMessage(epoch: 3, head: 1, acks: [.init(submission: submission.submission, seq: 1, status: .ordered)])
        #expect(machine.receiveFromCoordinator([Message(parts: ack.frames)], now: 30).isEmpty)
    }

    @Test func itsOwnEntryIsTheCoordinatorsAnswerSoTheNodeDoesNotProbeIt() throws {
        var machine = machine(replicated: true)
        _ = machine.receiveFromCoordinator(
            [Message(parts: WelcomeMessage(epoch: 3, head: 0, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100)).frames)], from: 0, now: 1
        )
        let submission = try submitted(machine.receiveFromClients([emit(7, wait: .ordered)], now: 10))[0]
        // No ACK comes for what was ordered (the node asks for none): the entry answers.
        let own = entry(1, submission: submission.submission, origin: 1, session: 77)
        #expect(words(machine.receivePublished([published([own])], now: 20)) == ["apply [1]", "emitted 7 at 1 applied"])
        #expect(!words(machine.tick(now: 20 + 2 * second)).contains("submit"), "no HELLO to probe a coordinator that answered")
    }

    @Test func aGapIsRepairedFromTheSyncSocketAndAppliedInOrder() throws {
        var machine = connected()
        #expect(words(machine.receivePublished([published([entry(1)])], now: 10)) == ["apply [1]"])
        let actions = machine.receivePublished([published([entry(3)])], now: 20)
        guard case .range(let request)? = try syncRequests(actions).first else {
            Issue.record("no range request: \(words(actions))")
            return
        }
        #expect(request.from == 2 && request.to == 2)
        let range = RangeMessage(request: request.request, epoch: 3, head: 3, entries: [entry(2)])
        #expect(words(machine.receiveSync([.range(range)], now: 30)) == ["apply [2, 3]"])
        #expect(machine.applied == 3)
    }

    @Test func anEmptyNodeJoinsThroughASnapshotAndAppliesWhatCameMeanwhileOnceItIsRestored() throws {
        var machine = machine(joinThroughSnapshot: true)
        let welcome = WelcomeMessage(epoch: 3, head: 10, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100))
        let joining = machine.receiveFromCoordinator([Message(parts: welcome.frames)], now: 1)
        guard case .snapshot(let request)? = try syncRequests(joining).first else {
            Issue.record("no snapshot request: \(words(joining))")
            return
        }
        // Entries after the snapshot's seq wait while it arrives.
        #expect(machine.receivePublished([published([entry(11)])], now: 2).isEmpty)
        let chunk = SnapshotChunkMessage(
            request: request.request, seq: 10, epoch: 3, chunk: 0, isLast: true,
            instances: [.init(address: "counter/a", lastSeq: 10, state: Array(#"{"count":10}"#.utf8))]
        )
        #expect(words(machine.receiveSync([.snapshotChunk(chunk)], now: 3)) == ["restore 10"])
        #expect(words(machine.restored(true, now: 4)) == ["apply [11]"])
        #expect(machine.applied == 11)
    }

    @Test func aSnapshotThatDoesNotRestoreIsAskedForAgain() throws {
        var machine = machine(joinThroughSnapshot: true)
        let welcome = WelcomeMessage(epoch: 3, head: 10, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100))
        guard case .snapshot(let request)? = try syncRequests(machine.receiveFromCoordinator([Message(parts: welcome.frames)], now: 1)).first else {
            Issue.record("no snapshot request")
            return
        }
        let chunk = SnapshotChunkMessage(request: request.request, seq: 10, epoch: 3, chunk: 0, isLast: true, instances: [])
        _ = machine.receiveSync([.snapshotChunk(chunk)], now: 2)
        guard case .snapshot(let again)? = try syncRequests(machine.restored(false, now: 3)).first else {
            Issue.record("the snapshot was not asked for again")
            return
        }
        #expect(again.request != request.request)
    }

    /// A heartbeat is published after the entries before it: in one batch from the publish socket,
    /// its head counts them, and it is no gap.
    @Test func aHeartbeatAfterEntriesInTheSameBatchAsksForNothing() throws {
        var machine = connected()
        let heartbeat = HeartbeatMessage(epoch: 3, head: 2, time: 0)
        let actions = machine.receivePublished([published([entry(1), entry(2)]), Message(parts: heartbeat.frames)], now: 10)
        #expect(words(actions) == ["apply [1, 2]"])
        // A heartbeat above what arrived is a gap, asked for at once.
        #expect(words(machine.receivePublished([Message(parts: HeartbeatMessage(epoch: 3, head: 4, time: 0).frames)], now: 20)) == ["sync"])
    }

    /// The report and digest policy: a node at the head that moved hashes what changed within its
    /// budget (a timer's tick); idle at the head it hashes everything first, so the report is
    /// exact; far behind, it hashes nothing.
    @Test func reportsHashEverythingWhenIdleAndNothingWhileCatchingUp() throws {
        var machine = connected()
        _ = machine.receivePublished([published([entry(1), entry(2)])], now: 10)
        #expect(
            machine.planReport() == .init(applied: 2, catchingUp: false, hashEverythingNow: false, hashChangesNow: true), "it moved since the last report"
        )
        #expect(machine.planReport() == .init(applied: 2, catchingUp: false, hashEverythingNow: true, hashChangesNow: false), "idle at the head")
        let far = 2 + NodeMachine.catchingUpLag + 1
        _ = machine.receivePublished([Message(parts: HeartbeatMessage(epoch: 3, head: far, time: 0).frames)], now: 20)
        #expect(machine.lag == far - 2)
        #expect(!machine.hashesDigests)
        #expect(machine.planReport() == .init(applied: 2, catchingUp: true, hashEverythingNow: false, hashChangesNow: false), "far behind: no digests")
        var near = connected()
        _ = near.receivePublished([Message(parts: HeartbeatMessage(epoch: 3, head: NodeMachine.catchingUpLag, time: 0).frames)], now: 10)
        #expect(near.hashesDigests && !near.planReport().catchingUp, "just within the lag, it hashes")
    }

    /// Resumed from a local snapshot copied over several turns, a node's instances are at
    /// different seqs until it applies the highest of them: it reports no digests until then,
    /// even at the head it knows.
    @Test func aNodeResumedFromAFuzzyCopyReportsNoDigestsUntilItsInstancesAreAtOneSeq() throws {
        var machine = machine()
        machine.resumeFollowing(from: 2, consistentFrom: 4)
        _ = machine.receiveFromCoordinator([Message(parts: WelcomeMessage(epoch: 3, head: 2, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100)).frames)], now: 1)
        #expect(machine.applied == 2 && !machine.hashesDigests)
        #expect(machine.planReport() == .init(applied: 2, catchingUp: true, hashEverythingNow: false, hashChangesNow: false))
        _ = machine.receivePublished([published([entry(3)])], now: 10)
        #expect(!machine.hashesDigests, "one short")
        _ = machine.receivePublished([published([entry(4)])], now: 20)
        #expect(machine.hashesDigests && machine.planReport() == .init(applied: 4, catchingUp: false, hashEverythingNow: false, hashChangesNow: true))
    }

    @Test func aNewTermWhoseLogEndsBeforeWhatWasAppliedRejoinsThroughASnapshot() throws {
        var machine = connected(head: 0, joinThroughSnapshot: true)
        _ = machine.receivePublished([published([entry(1), entry(2)])], now: 10)
        let heartbeat = HeartbeatMessage(epoch: 4, head: 1, time: 0)
        let actions = machine.receivePublished([Message(parts: heartbeat.frames)], now: 20)
        #expect(try syncRequests(actions).contains { if case .snapshot = $0 { true } else { false } })
        #expect(machine.epoch == 4)
    }

    @Test func badRequestsAreAnsweredWithAnErrorAndNotSubmitted() throws {
        var machine = connected()
        let unknown = Message(
            parts: [client.identity, []] + ClientRequest.emit(request: 8, wait: .ordered, codec: .json, address: "nosuch/a", payload: increment).frames
        )
        let actions = machine.receiveFromClients([unknown, Message(parts: [client.identity, [], [0xFF]])], now: 10)
        #expect(words(actions) == ["error 8 unknown flow", "error 0 truncated"])
        #expect(machine.submissions.count == 0)
    }

    @Test func anUnacknowledgedEmitFailsAtItsDeadlineAndAReportFallsDueEverySecond() throws {
        var machine = connected()
        _ = machine.receiveFromClients([emit(9, wait: .ordered)], now: 10)
        let tick = machine.tick(now: 10 + 10 * second)
        #expect(words(tick).contains { $0.hasPrefix("error 9 coordinator unavailable") })
        #expect(words(tick).contains("report"))
        #expect(!words(machine.tick(now: 10 + 10 * second + 100)).contains("report"))
    }

    /// Found by the simulation (seed 1): an entry a node submitted while it joined through a
    /// snapshot was ordered before the snapshot's seq, reached the node inside it, and its effects
    /// ran nowhere. Submissions now wait until the node has joined.
    @Test func submissionsWaitWhileTheNodeJoinsThroughASnapshot() throws {
        var machine = machine(joinThroughSnapshot: true)
        #expect(try submitted(machine.receiveFromClients([emit(1, wait: .ordered)], now: 1)).isEmpty, "not welcomed yet")
        let welcome = WelcomeMessage(epoch: 3, head: 10, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100))
        let joining = machine.receiveFromCoordinator([Message(parts: welcome.frames)], now: 2)
        #expect(try submitted(joining).isEmpty && machine.holdsSubmissions)
        guard case .snapshot(let request)? = try syncRequests(joining).first else {
            Issue.record("no snapshot request")
            return
        }
        let chunk = SnapshotChunkMessage(request: request.request, seq: 10, epoch: 3, chunk: 0, isLast: true, instances: [])
        _ = machine.receiveSync([.snapshotChunk(chunk)], now: 3)
        #expect(try submitted(machine.restored(true, now: 4)).count == 1, "sent once joined")
    }

    /// Replicated coordinators: the leader dies; the next one's first heartbeat makes the node
    /// greet every coordinator, and the WELCOME on the new leader's socket moves it there with
    /// its unacknowledged submissions, without waiting for the dead one to time out.
    @Test func aNewTermsHeartbeatFindsTheNewLeaderAtOnce() throws {
        var machine = machine(replicated: true)
        let welcome = { (epoch: UInt32) in Message(parts: WelcomeMessage(epoch: epoch, head: 0, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 100)).frames) }
        _ = machine.receiveFromCoordinator([welcome(3)], from: 0, now: 1)
        _ = machine.receiveFromClients([emit(1, wait: .ordered)], now: 2)
        // The same term's heartbeat changes nothing.
        let same = machine.receivePublished([Message(parts: HeartbeatMessage(epoch: 3, head: 0, time: 0).frames)], now: 3)
        #expect(!words(same).contains("greet every coordinator"))
        // A new term's: greet everyone.
        let newTerm = machine.receivePublished([Message(parts: HeartbeatMessage(epoch: 4, head: 0, time: 0).frames)], now: 4)
        #expect(words(newTerm).first == "greet every coordinator")
        // An older term's WELCOME on another socket (a late answer) is ignored.
        #expect(machine.receiveFromCoordinator([welcome(2)], from: 2, now: 5).isEmpty && machine.choice.currentIndex == 0)
        // The new leader's WELCOME, on its own socket: the node submits there, resending.
        let moved = machine.receiveFromCoordinator([welcome(4)], from: 1, now: 6)
        #expect(words(moved).first == "switch to inproc://bs" && machine.choice.currentIndex == 1)
        #expect(try submitted(moved).count == 1)
    }

    /// An entry written by a newer version of a flow than the node's build: the node applies what
    /// comes before it, nothing from it on, says so once, and names it in every report, from which
    /// the coordinator raises the alarm.
    @Test func aNodeStopsAtAnEntryOfANewerVersionAndSaysSo() {
        var machine = connected(head: 0)
        var newer = entry(2)
        newer.version = 2
        #expect(words(machine.receivePublished([published([entry(1), newer, entry(3)])], now: 10)) == ["apply [1]"])
        #expect(machine.unreadable == UnreadableEntry(seq: 2, flow: "counter", version: 2, reads: 1))
        #expect(machine.applied == 1)
        _ = machine.tick(now: 20)
        _ = machine.tick(now: 30)
        let critical = machine.takeObservations().filter { observation in
            if case .log(.critical, let message, _) = observation { "\(message)".contains("entry 2 of flow \"counter\" is at version 2") } else { false }
        }
        #expect(critical.count == 1, "said once")

        var membership = Membership(timeout: 10 * second, stallTimeout: 10 * second, forgetAfter: 100 * second)
        _ = membership.hello(node: 1, session: 77, info: NodeInfo(name: "node-1", clientEndpoint: "inproc://c", flows: ["counter"], pid: 1), peer: [1], now: 0)
        var report = NodeReport(name: "node-1", digest: "", digests: [:], instances: 1, runningEffects: 0, effectsLost: 0, pendingSubmissions: 0, connected: true)
        report.unreadable = machine.unreadable
        membership.report(NodeReportMessage(node: 1, applied: 1, time: 0, report: report), head: 3, now: 1)
        #expect(membership.takeNewUnreadable().map(\.unreadable.seq) == [2])
        membership.report(NodeReportMessage(node: 1, applied: 1, time: 0, report: report), head: 3, now: 2)
        #expect(membership.takeNewUnreadable().isEmpty, "alarmed once")
        let status = membership.status(epoch: 3, head: 3, firstSeq: 1, entriesPerSecond: 0, now: 2)
        #expect(status.nodes.first?.unreadable?.seq == 2)
        #expect(status.problems.contains { $0.hasPrefix("node-1 must be upgraded: entry 2 of flow \"counter\"") })
    }
}
