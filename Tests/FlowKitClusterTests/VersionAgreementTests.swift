@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import Testing
import ZeroMQ

/// The cluster orders a flow's events only at a version every live node of the flow runs
/// (docs/VERSIONING.md, guarantee 4): during a rolling upgrade the upgraded nodes' events wait.
@Suite struct VersionAgreementTests {
    static func info(_ id: UInt32, notes: UInt16) -> NodeInfo {
        NodeInfo(
            name: "node-\(id)", clientEndpoint: "tcp://127.0.0.1:\(id)", flows: ["notes", "tally"], pid: 1,
            flowVersions: notes == 1 ? nil : ["notes": notes]
        )
    }

    /// Node 1 writes `notes` at version 2, node 2 at 1; both were heard from at time 0.
    static func mixed(timeout: UInt64 = 3_000_000) -> Membership {
        var membership = Membership(timeout: timeout)
        membership.hello(node: 1, session: 11, info: info(1, notes: 2), peer: [1], now: 0)
        membership.hello(node: 2, session: 22, info: info(2, notes: 1), peer: [2], now: 0)
        return membership
    }

    static func refusal(_ agreement: VersionAgreement, flow: String = "notes", version: UInt16, now: UInt64) -> ProtocolError? {
        do {
            try agreement.check(flow: flow, version: version, now: now)
            return nil
        } catch {
            return error as? ProtocolError
        }
    }

    @Test func aNewerVersionWaitsForTheLastNodeOfTheOlderOne() throws {
        var membership = Self.mixed()
        #expect(membership.agreement.flows["notes"] == ClusterStatus.FlowVersions(agreed: 1, newest: 2, behind: ["node-2"]))
        #expect(membership.agreement.flows["tally"] == ClusterStatus.FlowVersions(agreed: 1, newest: 1, behind: []))
        let refused = try #require(Self.refusal(membership.agreement, version: 2, now: 1))
        #expect(refused.code == .versionNotAgreed)
        #expect(refused.message.contains("node-2 still writes version 1"), "\(refused.message)")
        #expect(Self.refusal(membership.agreement, version: 1, now: 1) == nil, "the older version goes on")
        #expect(Self.refusal(membership.agreement, flow: "elsewhere", version: 3, now: 1) == nil, "no live node runs it")

        // The status says who holds what back, and calls it a problem until it is done.
        let status = membership.status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 1)
        #expect(status.versions == ["notes": ClusterStatus.FlowVersions(agreed: 1, newest: 2, behind: ["node-2"])])
        #expect(status.nodes.map(\.flowVersions) == [["notes": 2], nil])
        #expect(status.problems.contains { $0.hasPrefix(#"flow "notes" is being upgraded: version 2 waits for node-2 (at 1)"#) }, "\(status.problems)")

        // Node 2 goes down: it no longer holds the version back.
        membership.report(Self.report(1), head: 0, now: 3_500_000)
        _ = membership.takeChangesInLiveness(now: 3_500_001)
        #expect(Self.refusal(membership.agreement, version: 2, now: 3_500_002) == nil)

        // It comes back, still at version 1: version 2 waits again.
        membership.report(Self.report(2), head: 0, now: 3_600_000)
        #expect(Self.refusal(membership.agreement, version: 2, now: 3_600_001)?.code == .versionNotAgreed)

        // Upgraded (a new process, a new HELLO): agreed at 2, and healthy as far as versions go.
        membership.hello(node: 2, session: 23, info: Self.info(2, notes: 2), peer: [3], now: 3_700_000)
        #expect(Self.refusal(membership.agreement, version: 2, now: 3_700_001) == nil)
        let upgraded = membership.status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 3_700_001)
        #expect(upgraded.versions == ["notes": ClusterStatus.FlowVersions(agreed: 2, newest: 2, behind: [])])
        #expect(!upgraded.problems.contains { $0.contains("being upgraded") })
    }

    /// A new leader has heard from no node: one of an older build may be about to say HELLO, so
    /// nothing above version 1 is ordered until the node timeout has passed.
    @Test func aNewLeaderHoldsNewerVersionsBackForTheNodeTimeout() throws {
        var membership = Membership(timeout: 3_000_000)
        membership.holdVersionsBack(until: 3_000_000)
        membership.hello(node: 1, session: 11, info: Self.info(1, notes: 2), peer: [1], now: 10)
        let early = try #require(Self.refusal(membership.agreement, version: 2, now: 1_000_000))
        #expect(early.code == .versionNotAgreed && early.message.contains("has not heard from every node yet"), "\(early.message)")
        #expect(Self.refusal(membership.agreement, version: 1, now: 1_000_000) == nil)
        #expect(Self.refusal(membership.agreement, version: 2, now: 3_000_000) == nil)
    }

    /// With the machine: a SUBMIT of a version a live node does not run is refused in the ACK, and
    /// ordered once that node is gone.
    @Test func theCoordinatorRefusesAnEventTheClusterHasNotAgreedOn() throws {
        var registry = FlowRegistry()
        registry.register(MigrationTests.TallyFlow.self, as: "notes")
        var configuration = CoordinatorConfiguration()
        configuration.nodeTimeout = .seconds(2)
        var machine = CoordinatorMachine(
            configuration: configuration, registry: registry, sequencer: Sequencer(epoch: 1, durableHead: 0), firstSeq: 1, now: 0
        )
        let first = RouterEnvelope(identity: [1], delimited: false)
        let second = RouterEnvelope(identity: [2], delimited: false)
        for (id, peer, version) in [(UInt32(1), first, UInt16(2)), (2, second, 1)] {
            let hello = HelloMessage(node: id, session: UInt64(id), info: Self.info(id, notes: version))
            _ = machine.receive([Message(parts: [peer.identity] + hello.frames)], now: 1)
        }
        func submit(_ id: UInt64, now: UInt64) throws -> (acks: [AckMessage.Ack], ordered: [Entry]) {
            let submission = Submission(
                submission: id, kind: .event, codec: .json, version: 2, submittedAt: 0, address: "notes/a",
                payload: Array(#"{"increment":{"amount":1}}"#.utf8)
            )
            let message = Message(parts: [first.identity] + SubmitMessage(origin: 1, session: 1, submissions: [submission]).frames)
            let actions = machine.receive([message], now: now)
            let acks = try actions.flatMap { action -> [AckMessage.Ack] in
                guard case .reply(let frames, _) = action, (try? WireHeader.read(frames[0], expecting: .ack)) != nil else { return [] }
                return try AckMessage(frames: frames).acks
            }
            let ordered = actions.flatMap { action -> [Entry] in
                guard case .commit(let group) = action else { return [] }
                return group.entries
            }
            return (acks, ordered)
        }
        // Past the new leader's node timeout, with node 2 alive at version 1: refused.
        _ = machine.hello(HelloMessage(node: 2, session: 2, info: Self.info(2, notes: 1)), from: second, now: 2_500_000)
        let refused = try submit(1, now: 2_500_001)
        #expect(refused.acks.map(\.reason) == [.versionNotAgreed] && refused.ordered.isEmpty)
        // Node 2 goes silent past the timeout: ordered, at the version it was written in.
        _ = machine.status(now: 5_000_000, instances: 0)
        let ordered = try submit(2, now: 5_000_001)
        #expect(ordered.acks.isEmpty, "a FlowKit node hears of it from its entry")
        #expect(ordered.ordered.map(\.version) == [2])
    }

    /// During an upgrade that reshapes a state, replicas of the two builds hash two encodings of
    /// the same state: their digests are not compared, those of one version still are.
    @Test func digestsOfTwoVersionsAreNotComparedAndOfOneVersionAre() throws {
        var report = Self.report(2).report
        report.flowVersions = ["notes": 2]
        let sent = NodeReportMessage(
            node: 2, applied: 9, time: 0, report: report,
            digests: [ReportedDigest(address: "notes/a", seq: 9, digest: StateDigest(high: 2, low: 2), version: 2),
                      ReportedDigest(address: "tally/a", seq: 9, digest: StateDigest(high: 3, low: 3))]
        )
        let received = try NodeReportMessage(frames: sent.frames)
        #expect(received.digests.map(\.version) == [2, 1], "the version is the report's, per flow")
        var references = DigestReferences()
        let older = [ReportedDigest(address: "notes/a", seq: 9, digest: StateDigest(high: 1, low: 1)),
                     ReportedDigest(address: "tally/a", seq: 9, digest: StateDigest(high: 4, low: 4))]
        #expect(references.compare(older, reporter: "node-1").isEmpty)
        let found = references.compare(received.digests, reporter: "node-2")
        #expect(found.map(\.address) == ["tally/a"], "notes/a at version 2 is compared with nothing of version 1")
    }

    static func report(_ node: UInt32) -> NodeReportMessage {
        NodeReportMessage(
            node: node, applied: 0, time: 0,
            report: NodeReport(
                name: "node-\(node)", digest: "", digests: [:], instances: 0, runningEffects: 0, effectsLost: 0, pendingSubmissions: 0, connected: true
            )
        )
    }
}
