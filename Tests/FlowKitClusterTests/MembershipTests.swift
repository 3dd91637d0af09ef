@testable import FlowKitCluster
import Testing

@Suite struct MembershipTests {
    @Test func differentDigestsAfterTheSameEntryAreADivergence() {
        var membership = Membership(timeout: 1_000)
        #expect(membership.compare(address: "counter/a", instance: InstanceDigest(seq: 7, digest: "aa"), reporter: "node-1") == nil)
        #expect(membership.compare(address: "counter/a", instance: InstanceDigest(seq: 7, digest: "aa"), reporter: "node-2") == nil)
        let divergence = membership.compare(address: "counter/a", instance: InstanceDigest(seq: 7, digest: "bb"), reporter: "node-3")
        #expect(divergence == Membership.Divergence(address: "counter/a", seq: 7, digests: ["node-1": "aa", "node-3": "bb"]))
        #expect(membership.divergenceCount == 1)
        // The same digest at another seq is a state of its own.
        #expect(membership.compare(address: "counter/a", instance: InstanceDigest(seq: 8, digest: "bb"), reporter: "node-3") == nil)
    }

    /// The oldest references go once the capacity is reached, one by one, so a full table costs
    /// the same per digest as an empty one (it once shifted the whole table per digest).
    @Test func theOldestReferencesGoFirstOnceTheTableIsFull() {
        var membership = Membership(timeout: 1_000, referenceCapacity: 1_000)
        for seq in 1...100_000 as ClosedRange<UInt64> {
            _ = membership.compare(address: "load/\(seq % 10)", instance: InstanceDigest(seq: seq, digest: "aa"), reporter: "node-1")
        }
        // Forgotten: a different digest becomes the new reference, not a divergence.
        #expect(membership.compare(address: "load/1", instance: InstanceDigest(seq: 1, digest: "bb"), reporter: "node-2") == nil)
        // Still remembered: the last 1,000.
        #expect(membership.compare(address: "load/0", instance: InstanceDigest(seq: 100_000, digest: "bb"), reporter: "node-2") != nil)
        // (99,001 made room for the new reference above.)
        #expect(membership.compare(address: "load/2", instance: InstanceDigest(seq: 99_002, digest: "bb"), reporter: "node-2") != nil)
    }
}

extension MembershipTests {
    /// HELLOs with made-up node ids cannot grow the table past its capacity; the node heard from
    /// least recently goes first, and a real node that keeps reporting stays.
    @Test func madeUpNodesCannotGrowTheTable() {
        var membership = Membership(timeout: 1_000, memberCapacity: 8)
        let info = NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: 1)
        _ = membership.hello(node: 1, session: 1, info: info, now: 0)
        for id in 1_000..<3_000 as Range<UInt32> {
            let now = UInt64(id)
            _ = membership.hello(node: id, session: 9, info: info, now: now)
            if id % 4 == 0 { _ = membership.hello(node: 1, session: 1, info: info, now: now) }  // node 1 stays in touch
        }
        #expect(membership.members.count == 8)
        #expect(membership.members[1] != nil)
        #expect(membership.members[2_999] != nil)
        #expect(membership.members[1_000] == nil)
    }
}
