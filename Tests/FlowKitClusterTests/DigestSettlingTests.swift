@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKit
import FlowKitExamples
import Foundation
import Logging
import Testing

/// The backlog of changed instances a load leaves when it stops: settled (hashed up to date) at
/// once when small, and otherwise off the owner's thread, slice after slice, outside the budget.
@Suite struct DigestSettlingTests {
    /// Counters, each changed once and none hashed, on a clock that stands still: the hashing
    /// budget is refilled only by what a test charges.
    private static func changedCounters(_ count: Int) -> ReplicaSet {
        ReplicaDigestTests.counters(count) { 1_000_000 }
    }

    @Test func aLargeBacklogSettlesElsewhereBackToBackOutsideTheBudget() throws {
        let count = DigestBook.defaultHashedNowAtMost + 1_000
        let reference = ReplicaDigestTests.counters(count).combinedDigest(exact: true)
        let replicas = Self.changedCounters(count)
        // A round's first slice, charged ten seconds of hashing, spends the budget; the clock
        // stands still, and the next round within it hands out nothing. (A report's hashing on the
        // owner's thread leaves a backlog this large to the rounds whole.)
        #expect(replicas.takeChanged(hashing: true).isEmpty)
        replicas.startDigestRound(now: 1_000, spreadOver: 0)
        let first = replicas.nextDigestSlice(now: 1_000)
        replicas.finishDigestJobs(ReplicaSet.hash(first).results, hashingMicros: 10_000_000)
        let left = replicas.unhashedCount
        #expect(left > DigestBook.defaultHashedNowAtMost && left < count)
        replicas.startDigestRound(now: 1_000, spreadOver: 1_000_000)
        #expect(replicas.nextDigestSlice(now: 1_000).isEmpty, "the budget was spent")

        let before = replicas.lastCombinedDigest
        #expect(replicas.settleDigests() == before, "settling hashed the backlog on the owner's thread")
        #expect(replicas.unhashedCount == left && !replicas.digestsAreCurrent)

        // The next round hands the backlog out back to back (the clock passed to it stands still)
        // though the budget is spent.
        let slices = ReplicaDigestTests.hashRoundBackToBack(replicas, now: 2_000)
        #expect(slices == (left + DigestBook.restoreSlice - 1) / DigestBook.restoreSlice)
        #expect(replicas.digestsAreCurrent && replicas.unhashedCount == 0)
        #expect(replicas.settleDigests() == reference)

        // Once settled, the next change goes within the budget again: the spent budget holds it.
        replicas.apply(
            Entry(
                seq: UInt64(count + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(count + 1),
                submittedAt: 0, committedAt: 0, address: "counter/0", payload: Array(#"{"increment":{}}"#.utf8)
            ),
            runEffects: false
        )
        replicas.startDigestRound(now: 3_000, spreadOver: 1_000_000)
        #expect(replicas.nextDigestSlice(now: 3_000).isEmpty)
    }

    @Test func aSmallBacklogSettlesAtOnce() {
        let replicas = Self.changedCounters(100)
        #expect(replicas.settleDigests() == ReplicaDigestTests.counters(100).combinedDigest(exact: true))
        #expect(replicas.digestsAreCurrent && replicas.unhashedCount == 0)
    }
}
