@_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import Testing
import ZeroMQ

/// Each connection is answered in its peer's protocol version (docs/VERSIONING.md, "Upgrading the
/// wire protocol"): what this build encodes in protocol 4 is said in 3 to a peer of protocol 3,
/// and what it reads in 3 means what it meant.
@Suite struct WireDialectTests {
    static let event = ProtocolCodecTests.entry
    static let cancel: Entry = {
        var entry = ProtocolCodecTests.entry
        entry.seq = 43
        entry.kind = .cancel
        entry.version = 0
        return entry
    }()

    @Test func everyMessageSaidInProtocol3ReadsAsItWasMeant() throws {
        let submissions = [
            Submission(submission: 1, kind: .event, codec: .json, version: 1, submittedAt: 5, address: "counter/a", payload: [0x7B, 0x7D]),
            Submission(submission: 2, kind: .cancel, codec: .json, version: 0, submittedAt: 6, address: "timer/t", payload: Array("timer".utf8)),
        ]
        let submit = SubmitMessage(origin: 1, session: 77, submissions: submissions)
        let submit3 = try WireDialect.translate(submit.frames, to: 3)
        #expect(submit3[0][2] == 3)
        #expect(submit3[1].count == submit.frames[1].count - 4, "two records, two bytes fewer each")
        #expect(try SubmitMessage(frames: submit3) == submit)

        let entries = EntriesMessage(address: EntriesMessage.batchTopic, epoch: 3, entries: [Self.event, Self.cancel])
        let entries3 = try WireDialect.translate(entries.frames, to: 3, topic: true)
        #expect(entries3[0] == entries.frames[0], "the topic is left alone")
        #expect(entries3[1][2] == 3)
        #expect(try EntriesMessage(frames: entries3) == entries)

        // A protocol 3 entry record is the log's unversioned layout, byte for byte.
        var records = ByteReader(entries3[2], context: "records", protocolVersion: 3)
        let raw = try records.mapRecords("entry") { $0.readRest() }
        #expect(raw.map { Entry.RecordLayout.unversioned.upgrade($0) } == [Self.event.encoded, Self.cancel.encoded])

        let range = RangeMessage(request: 5, epoch: 1, head: 50, entries: [Self.event])
        #expect(try RangeMessage(frames: WireDialect.translate(range.frames, to: 3)) == range)

        // A standby keeps FETCHED's records in its log as they are: in this build's layout.
        let fetched = FetchedMessage(request: 2, epoch: 1, committed: 9, records: [Self.event.encoded, Self.cancel.encoded])
        #expect(try FetchedMessage(frames: WireDialect.translate(fetched.frames, to: 3)) == fetched)

        let chunk = SnapshotChunkMessage(request: 1, seq: 9, epoch: 1, chunk: 0, isLast: true, instances: [
            .init(address: "counter/a", lastSeq: 3, state: Array(#"{"count":1}"#.utf8)),
        ])
        #expect(try WireDialect.translate(chunk.frames, to: 3) == chunk.frames.map { var frame = $0; if frame == chunk.frames[0] { frame[2] = 3 }; return frame })

        // Messages without records differ in the version byte only.
        let hello = HelloMessage(node: 1, session: 2, info: NodeInfo(name: "node-1", clientEndpoint: "tcp://x:1", flows: ["counter"], pid: 9))
        let hello3 = try WireDialect.translate(hello.frames, to: 3)
        #expect(hello3[0] == [0x46, 0x4B, 3] + hello.frames[0].dropFirst(3))
        #expect(try HelloMessage(frames: hello3) == hello)
        let heartbeat = HeartbeatMessage(epoch: 1, head: 99, time: 123)
        #expect(try HeartbeatMessage(frames: WireDialect.translate(heartbeat.frames, to: 3, topic: true)) == heartbeat)

        // This build's own version is left as it is.
        #expect(try WireDialect.translate(submit.frames, to: WireHeader.version) == submit.frames)
    }

    @Test func whatProtocol3CannotCarryIsRefusedNotSentAsSomethingElse() throws {
        var newer = Self.event
        newer.version = 2
        let range = RangeMessage(request: 77, epoch: 1, head: 50, entries: [Self.event, newer])
        let refusal = try #require(throws: ProtocolError.self) { try WireDialect.translate(range.frames, to: 3) }
        #expect(refusal.code == .unsupportedVersion)
        #expect(refusal.message.contains("entry 42 was written by version 2 of its flow, which protocol 3 cannot carry"), "\(refusal.message)")

        // A reply that cannot be said is a refusal to the request it answers, in the peer's version.
        let answer = WireDialect.answer(range.frames, in: 3)
        #expect(answer[0][2] == 3)
        let error = try ErrorReply(frames: answer)
        #expect(error.request == 77)
        #expect(error.error.code == .unsupportedVersion)
        #expect(error.protocolVersion == 3)

        let submit = SubmitMessage(origin: 1, session: 7, submissions: [
            Submission(submission: 1, kind: .event, codec: .json, version: 3, submittedAt: 5, address: "counter/a", payload: [0x7B, 0x7D]),
        ])
        #expect(throws: ProtocolError.self) { try WireDialect.translate(submit.frames, to: 3) }

        let chunk = SnapshotChunkMessage(request: 1, seq: 9, epoch: 1, chunk: 0, isLast: true, instances: [
            .init(address: "notes/a", lastSeq: 3, state: Array(#"{"lines":[]}"#.utf8), stateVersion: 2),
        ])
        let stateRefusal = try #require(throws: ProtocolError.self) { try WireDialect.translate(chunk.frames, to: 3) }
        #expect(stateRefusal.message.contains("the state of notes/a was written by version 2"), "\(stateRefusal.message)")
    }

    @Test func aRouterAnswersEachPeerInTheVersionItSpoke() throws {
        let request = ClientRequest.status(request: 5)
        var frames3 = request.frames
        frames3[0][2] = 3
        let (peer, body) = try #require(RouterEnvelope.split(Message(parts: [[9]] + frames3)))
        #expect(peer.protocolVersion == 3)
        #expect(try ClientRequest(frames: body) == request, "protocol 3 reads as it did")
        let reply = peer.reply(ClientReply.status(request: 5, json: Array("{}".utf8)).frames)
        #expect(reply.parts[1][2] == 3)

        // A version this process does not speak is refused in the nearest one it does: the
        // refusal tells the peer which to try.
        var frames9 = request.frames
        frames9[0][2] = 9
        let (newer, _) = try #require(RouterEnvelope.split(Message(parts: [[9]] + frames9)))
        #expect(newer.protocolVersion == WireHeader.spoken.upperBound)
        let tooOld = try #require(RouterEnvelope.split(Message(parts: [[9], [0x46, 0x4B, 1, 0x36]])))
        #expect(tooOld.0.protocolVersion == WireHeader.spoken.lowerBound)
        #expect(throws: ProtocolError.self) { try ClientRequest(frames: frames9) }
    }

    @Test func aRefusalOfTheVersionInAnOlderOneSaysWhichToSpeak() throws {
        let refusal = ErrorReply(request: 1, error: ProtocolError(.unsupportedVersion, "protocol version 4 is not supported"))
        let older = try ErrorReply(frames: WireDialect.translate(refusal.frames, to: 3))
        #expect(older.olderProtocol(than: 4) == 3)
        #expect(try ErrorReply(frames: older.frames) == older, "encoded again in the version it came in")
        #expect(older.olderProtocol(than: 3) == nil, "already speaking it")
        #expect(try ErrorReply(frames: refusal.frames).olderProtocol(than: 4) == nil, "a refusal in the same version says nothing new")
        let other = try ErrorReply(frames: WireDialect.translate(ErrorReply(request: 1, error: ProtocolError(.overloaded, "busy")).frames, to: 3))
        #expect(other.olderProtocol(than: 4) == nil, "only a refusal of the version")
    }

    /// While a node of protocol 3 is live, the leader publishes in 3 and orders no event above
    /// version 1 of any flow: protocol 3 cannot carry one, and every node receives every entry.
    @Test func aNodeOfProtocol3HoldsEveryNewerVersionBack() throws {
        var membership = Membership(timeout: 3_000_000)
        membership.hello(node: 1, session: 11, info: VersionAgreementTests.info(1, notes: 2), peer: [1], now: 0)
        membership.hello(node: 2, session: 22, info: VersionAgreementTests.info(2, notes: 1), peer: [2], protocolVersion: 3, now: 0)
        #expect(membership.agreement.oldestProtocol == 3)
        let refused = try #require(VersionAgreementTests.refusal(membership.agreement, flow: "tally", version: 2, now: 1))
        #expect(refused.code == .versionNotAgreed)
        #expect(refused.message.contains("node-2 speaks wire protocol 3"), "\(refused.message)")
        #expect(VersionAgreementTests.refusal(membership.agreement, flow: "tally", version: 1, now: 1) == nil)

        let status = membership.status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 1)
        #expect(status.nodes.map(\.protocolVersion) == [nil, 3])
        #expect(status.problems.contains("node-2 speaks wire protocol 3: upgrade it; events of flow versions above 1 wait until then"), "\(status.problems)")

        // Upgraded: a new process says HELLO in 4.
        membership.hello(node: 2, session: 23, info: VersionAgreementTests.info(2, notes: 2), peer: [3], now: 2)
        #expect(membership.agreement.oldestProtocol == WireHeader.version)
        #expect(VersionAgreementTests.refusal(membership.agreement, version: 2, now: 3) == nil)
    }

    /// A node speaks its newest protocol to a coordinator until the coordinator refuses it in an
    /// older one; then that one, and its newest again in the next term.
    @Test func aNodeSpeaksTheCoordinatorsOlderProtocolUntilItsNextTerm() throws {
        var machine = NodeMachineTests().machine()
        _ = machine.start(now: 0)
        let hello = machine.hello
        guard case .submit(let helloFrames) = hello else { Issue.record("a HELLO is a submission"); return }
        #expect(machine.speaking(helloFrames, to: 0) == helloFrames)

        let refusal = try WireDialect.translate(
            ErrorReply(request: 0, error: ProtocolError(.unsupportedVersion, "protocol version 4 is not supported")).frames, to: 3
        )
        let actions = machine.receiveFromCoordinator([Message(parts: refusal)], now: 1_000)
        #expect(actions.contains { if case .submit(let frames) = $0 { frames == helloFrames } else { false } }, "says HELLO again")
        #expect(machine.speaking(helloFrames, to: 0)?.first?[2] == 3)

        let welcome = WelcomeMessage(epoch: 2, head: 0, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 1_000))
        _ = machine.receiveFromCoordinator([Message(parts: try WireDialect.translate(welcome.frames, to: 3))], now: 2_000)
        #expect(machine.speaking(helloFrames, to: 0)?.first?[2] == 3, "the first term's WELCOME changes nothing")
        let restarted = WelcomeMessage(epoch: 3, head: 0, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 1_000))
        _ = machine.receiveFromCoordinator([Message(parts: restarted.frames)], now: 3_000)
        #expect(machine.speaking(helloFrames, to: 0) == helloFrames, "a new term may be a newer build")
    }
}

/// A follower outside a node (a watcher, a remote flow, an export) asks again at once in the
/// protocol its coordinator refused its request in.
@Suite struct FollowerProtocolTests {
    static func refusal(of request: UInt64) throws -> ErrorReply {
        try ErrorReply(frames: WireDialect.translate(
            ErrorReply(request: request, error: ProtocolError(.unsupportedVersion, "protocol version 4 is not supported")).frames, to: 3
        ))
    }

    @Test func aRefusedRangeOrSnapshotIsAskedForAgainInTheCoordinatorsVersion() throws {
        var follower = LogFollower(retryAfter: 1_000_000, rangeSize: 100)
        #expect(follower.protocolVersion == WireHeader.spoken.upperBound)
        guard case .requestRange(let range)? = follower.noteHead(50, now: 0).first else { Issue.record("a range request"); return }
        let again = follower.receive(try Self.refusal(of: range.request), now: 1)
        #expect(follower.protocolVersion == 3)
        guard case .requestRange(let retried)? = again.first else { Issue.record("asked again at once: \(again)"); return }
        #expect(retried.from == 1 && retried.to == 50 && retried.request != range.request)

        guard case .requestSnapshot(let snapshot)? = follower.startSnapshot(now: 2).first else { Issue.record("a snapshot request"); return }
        // Already speaking 3: a refusal in 3 changes nothing, and the snapshot waits for its retry.
        #expect(follower.receive(try Self.refusal(of: snapshot.request), now: 3).isEmpty)

        var fresh = LogFollower()
        guard case .requestSnapshot(let first)? = fresh.startSnapshot(now: 0).first else { Issue.record("a snapshot request"); return }
        guard case .requestSnapshot(let second)? = fresh.receive(try Self.refusal(of: first.request), now: 1).first else {
            Issue.record("the snapshot asked for again at once")
            return
        }
        #expect(second.request != first.request)
        #expect(fresh.protocolVersion == 3)
    }
}
