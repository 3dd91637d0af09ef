@testable import FlowKitCluster
import Testing

/// Snapshots take at most 5 % of a core: after one that cost `c` µs of CPU, the next waits 19 `c`.
@Suite struct SnapshotPacingTests {
    @Test func theFirstSnapshotIsAllowedAtOnce() {
        #expect(SnapshotPacing().allows(now: 0))
    }

    @Test func aSnapshotThatCostSecondsPutsTheNextOffByNineteenTimesThat() {
        var pacing = SnapshotPacing()
        pacing.saved(cost: 2_000_000, now: 10_000_000)
        #expect(!pacing.allows(now: 10_000_000 + 37_999_999))
        #expect(pacing.allows(now: 10_000_000 + 38_000_000))
        #expect(pacing.lastCost == 2_000_000)
    }

    @Test func aCheapSnapshotLeavesTheIntervalInCharge() {
        var pacing = SnapshotPacing()
        pacing.saved(cost: 1_000, now: 5_000_000)
        #expect(pacing.allows(now: 5_019_000))
    }
}
