@_spi(Wire) @testable import FlowKitCluster
import FlowKit
import Testing

@Suite struct MembershipTests {
    private static let aa = StateDigest(high: 0xaa, low: 0)
    private static let bb = StateDigest(high: 0xbb, low: 0)

    private static func reported(_ address: String, _ seq: UInt64, _ digest: StateDigest) -> ReportedDigest {
        ReportedDigest(address: address, seq: seq, digest: digest)
    }

    @Test func differentDigestsAfterTheSameEntryAreADivergence() {
        var references = DigestReferences()
        #expect(references.compare(Self.reported("counter/a", 7, Self.aa), reporter: "node-1") == nil)
        #expect(references.compare(Self.reported("counter/a", 7, Self.aa), reporter: "node-2") == nil)
        let divergence = references.compare(Self.reported("counter/a", 7, Self.bb), reporter: "node-3")
        #expect(
            divergence == DigestReferences.Divergence(address: "counter/a", seq: 7, digests: ["node-1": Self.aa.description, "node-3": Self.bb.description])
        )
        #expect(Self.bb.description == "00000000000000bb0000000000000000")
        // The same digest at another seq is a state of its own.
        #expect(references.compare(Self.reported("counter/a", 8, Self.bb), reporter: "node-3") == nil)
    }

    /// A whole report at once, as the coordinator compares them off its loop: the divergences come
    /// back in address order, and the machine counts and alarms each.
    @Test func aReportsDivergencesAreFoundInAddressOrderAndCounted() {
        let check = DivergenceCheck()
        let first = [Self.reported("counter/b", 3, Self.aa), Self.reported("counter/a", 2, Self.aa), Self.reported("counter/c", 4, Self.aa)]
        #expect(check.compare(first, reporter: "node-1").isEmpty)
        let second = [Self.reported("counter/c", 4, Self.bb), Self.reported("counter/a", 2, Self.bb), Self.reported("counter/b", 3, Self.aa)]
        let found = check.compare(second, reporter: "coordinator")
        #expect(found.map(\.address) == ["counter/a", "counter/c"])
        #expect(check.compare([Self.reported("counter/b", 3, Self.bb)], reporter: "node-1").isEmpty, "a replica never diverges from itself")
        var membership = Membership(timeout: 1_000)
        membership.noteDivergences(found.count)
        #expect(membership.status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 0).divergences == 2)
    }

    /// The oldest references go once the capacity is reached, one by one, so a full table costs
    /// the same per digest as an empty one (it once shifted the whole table per digest).
    @Test func theOldestReferencesGoFirstOnceTheTableIsFull() {
        var references = DigestReferences(capacity: 1_000)
        for seq in 1...100_000 as ClosedRange<UInt64> {
            _ = references.compare(Self.reported("load/\(seq % 10)", seq, Self.aa), reporter: "node-1")
        }
        // Forgotten: a different digest becomes the new reference, not a divergence.
        #expect(references.compare(Self.reported("load/1", 1, Self.bb), reporter: "node-2") == nil)
        // Still remembered: the last 1,000.
        #expect(references.compare(Self.reported("load/0", 100_000, Self.bb), reporter: "node-2") != nil)
        // (99,001 made room for the new reference above.)
        #expect(references.compare(Self.reported("load/2", 99_002, Self.bb), reporter: "node-2") != nil)
    }
}

extension MembershipTests {
    /// HELLOs with made-up node ids cannot grow the table past its capacity; the node heard from
    /// least recently goes first, and a real node that keeps reporting stays.
    @Test func madeUpNodesCannotGrowTheTable() {
        var membership = Membership(timeout: 1_000, memberCapacity: 8)
        let info = NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: 1)
        _ = membership.hello(node: 1, session: 1, info: info, peer: peer(1), now: 0)
        for id in 1_000..<3_000 as Range<UInt32> {
            let now = UInt64(id)
            _ = membership.hello(node: id, session: 9, info: info, peer: peer(id), now: now)
            if id % 4 == 0 { _ = membership.hello(node: 1, session: 1, info: info, peer: peer(1), now: now) }  // node 1 stays in touch
        }
        #expect(membership.members.count == 8)
        #expect(membership.members[1] != nil)
        #expect(membership.members[2_999] != nil)
        #expect(membership.members[1_000] == nil)
        // A forgotten node's connection no longer speaks for it; a remembered one's does.
        #expect(membership.speaker(peer(1_000)) == nil)
        #expect(membership.speaker(peer(2_999))?.node == 2_999 && membership.speaker(peer(1))?.node == 1)
    }

    /// A connection's ROUTER identity, as the tests make it up: one per node.
    func peer(_ node: UInt32) -> [UInt8] { withUnsafeBytes(of: node.bigEndian) { Array($0) } }

    /// The last HELLO of a node binds it to its connection, and a connection to one node.
    @Test func theLastHelloBindsANodeToItsConnection() {
        var membership = Membership(timeout: 1_000)
        _ = membership.hello(node: 1, session: 1, info: Self.info, peer: [1], now: 0)
        #expect(membership.speaker([1])! == (1, 1))
        _ = membership.hello(node: 1, session: 2, info: Self.info, peer: [2], now: 1)  // restarted, a new connection
        #expect(membership.speaker([1]) == nil && membership.speaker([2])! == (1, 2))
        _ = membership.hello(node: 3, session: 1, info: Self.info, peer: [2], now: 2)  // the connection says it is node 3
        #expect(membership.speaker([2])! == (3, 1))
        #expect(membership.members[1]?.peer == nil, "node 1 has no connection now")
    }
}

extension MembershipTests {
    static let info = NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: 1)

    static func report(_ node: UInt32, applied: UInt64, digest: String = "aa", digestSeq: UInt64? = nil) -> NodeReportMessage {
        let report = NodeReport(
            name: "node-\(node)", digest: digest, digests: [:], instances: 1, runningEffects: 0, effectsLost: 0,
            pendingSubmissions: 0, connected: true, digestSeq: digestSeq ?? applied
        )
        return NodeReportMessage(node: node, applied: applied, time: 0, report: report)
    }

    /// A node's lag is how far behind the head it was when it reported, not the head now minus
    /// what it reported a second ago: under load the head runs ahead between reports.
    @Test func theLagIsAsOfTheReport() {
        var membership = Membership(timeout: 10_000_000)
        _ = membership.hello(node: 1, session: 1, info: Self.info, peer: peer(1), now: 0)
        membership.report(Self.report(1, applied: 990), head: 1_000, now: 1)
        #expect(membership.status(epoch: 1, head: 1_500, firstSeq: 1, entriesPerSecond: 500, now: 2).nodes.map(\.lag) == [10])
        membership.report(Self.report(1, applied: 1_500), head: 1_500, now: 3)
        #expect(membership.status(epoch: 1, head: 2_000, firstSeq: 1, entriesPerSecond: 500, now: 4).nodes.map(\.lag) == [0])
    }

    /// A live node behind the head that applies nothing for the stall timeout is stalled, alarmed
    /// once; progress, or reaching the head, ends the stall.
    @Test func aNodeThatStopsApplyingWhileTheHeadMovesIsStalled() {
        var membership = Membership(timeout: 10_000_000, stallTimeout: 5_000_000)
        _ = membership.hello(node: 1, session: 1, info: Self.info, peer: peer(1), now: 0)
        // Idle at the head for long: not stalled when the head then moves.
        _ = membership.report(Self.report(1, applied: 5), head: 5, now: 1_000_000)
        _ = membership.report(Self.report(1, applied: 5), head: 5, now: 20_000_000)
        _ = membership.report(Self.report(1, applied: 5), head: 8, now: 21_000_000)
        #expect(membership.takeNewStalls(head: 8, now: 21_000_000).isEmpty)
        #expect(membership.status(epoch: 1, head: 8, firstSeq: 1, entriesPerSecond: 0, now: 21_000_000).nodes[0].stalled == false)
        // Five seconds later, still at 5.
        _ = membership.report(Self.report(1, applied: 5), head: 9, now: 26_000_000)
        #expect(membership.takeNewStalls(head: 9, now: 26_000_000).map(\.id) == [1])
        #expect(membership.takeNewStalls(head: 9, now: 27_000_000).isEmpty, "alarmed once")
        #expect(membership.status(epoch: 1, head: 9, firstSeq: 1, entriesPerSecond: 0, now: 27_000_000).nodes[0].stalled)
        // It moves again.
        _ = membership.report(Self.report(1, applied: 6), head: 9, now: 28_000_000)
        #expect(membership.status(epoch: 1, head: 9, firstSeq: 1, entriesPerSecond: 0, now: 28_000_000).nodes[0].stalled == false)
        // A node that is down is down, not stalled.
        #expect(membership.status(epoch: 1, head: 9, firstSeq: 1, entriesPerSecond: 0, now: 60_000_000).nodes[0].stalled == false)
    }

    /// `flowkit status` is healthy only when every node is alive, at the head, with a digest of the
    /// head equal to the others'.
    @Test func healthNeedsEveryNodeAtTheHeadWithTheSameDigest() {
        var membership = Membership(timeout: 10_000_000, stallTimeout: 5_000_000)
        for node in 1...2 as ClosedRange<UInt32> {
            let info = NodeInfo(name: "node-\(node)", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: 1)
            _ = membership.hello(node: node, session: 1, info: info, peer: peer(node), now: 0)
        }
        func problems(_ head: UInt64, now: UInt64 = 1_000_000) -> [String] {
            membership.status(epoch: 1, head: head, firstSeq: 1, entriesPerSecond: 0, now: now).problems
        }
        _ = membership.report(Self.report(1, applied: 10), head: 10, now: 1_000_000)
        _ = membership.report(Self.report(2, applied: 10), head: 10, now: 1_000_000)
        #expect(problems(10) == [])
        #expect(problems(12).count == 2, "\(problems(12))")
        _ = membership.report(Self.report(2, applied: 10, digestSeq: 0), head: 10, now: 1_000_000)
        #expect(problems(10) == ["node-2's digest describes seq 0, not yet its applied seq 10 (still hashing)"])
        _ = membership.report(Self.report(2, applied: 10, digest: "bb"), head: 10, now: 1_000_000)
        #expect(problems(10).first?.hasPrefix("digests differ at seq 10") == true, "\(problems(10))")
        #expect(problems(10, now: 30_000_000).count == 2, "both down")
        #expect(Membership(timeout: 1).status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 0).problems == ["no node has reported to the coordinator"])
        // A busy cluster (a timer ticking): a node two seconds of ordering behind keeps up, and
        // digests compare among the nodes that reported at the same seq.
        _ = membership.report(Self.report(1, applied: 11), head: 12, now: 1_000_000)
        _ = membership.report(Self.report(2, applied: 10), head: 12, now: 1_000_000)
        let busy = membership.status(epoch: 1, head: 12, firstSeq: 1, entriesPerSecond: 1, now: 1_000_000)
        #expect(busy.problems == [], "\(busy.problems)")
        #expect(membership.status(epoch: 1, head: 13, firstSeq: 1, entriesPerSecond: 1, now: 1_000_000).problems == ["node-2 has applied 10 of 13"])
    }
}

extension MembershipTests {
    /// A node that stops reporting is down, alarmed once; a report brings it back; one down for
    /// the forget interval leaves the status (a made-up HELLO cannot keep the cluster unhealthy).
    @Test func aSilentNodeIsDownOnceThenForgotten() {
        var membership = Membership(timeout: 3_000_000, forgetAfter: 60_000_000)
        _ = membership.hello(node: 1, session: 1, info: Self.info, peer: peer(1), now: 0)
        _ = membership.hello(node: 2, session: 1, info: Self.info, peer: peer(2), now: 0)
        _ = membership.report(Self.report(1, applied: 0), head: 0, now: 0)
        #expect(membership.takeChangesInLiveness(now: 1_000_000).down.isEmpty)
        _ = membership.report(Self.report(1, applied: 0), head: 0, now: 4_000_000)
        #expect(membership.takeChangesInLiveness(now: 4_000_000).down.map(\.id) == [2])
        #expect(membership.takeChangesInLiveness(now: 5_000_000).down.isEmpty, "alarmed once")
        _ = membership.report(Self.report(1, applied: 0), head: 0, now: 59_000_000)
        let later = membership.takeChangesInLiveness(now: 61_000_000)
        #expect(later.forgotten.map(\.id) == [2])
        #expect(membership.members.keys.sorted() == [1])
        // Node 1 went quiet too; it comes back before it is forgotten: down, then alive again.
        #expect(membership.takeChangesInLiveness(now: 63_000_000).down.map(\.id) == [1])
        _ = membership.report(Self.report(1, applied: 0), head: 0, now: 64_000_000)
        #expect(membership.status(epoch: 1, head: 0, firstSeq: 1, entriesPerSecond: 0, now: 64_000_000).nodes.map(\.alive) == [true])
        #expect(membership.takeChangesInLiveness(now: 68_000_000).down.map(\.id) == [1], "a new silence is alarmed again")
    }
}
