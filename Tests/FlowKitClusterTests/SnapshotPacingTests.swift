@testable import FlowKitCluster
import Foundation
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

    /// Within a snapshot, the encoding sleeps three times each 5 ms burst of CPU: 20 ms of work
    /// take at least 20 ms plus three times every burst completed (15 ms and more of them).
    @Test func anEncodingSleepsThreeTimesEachBurstOfCPU() {
        var dutyCycle = SnapshotDutyCycle()
        let cpuStarted = ThreadCPUClock.micros()
        let wallStarted = WallClock.micros()
        var spin: UInt64 = 0
        while ThreadCPUClock.micros() - cpuStarted < 20_000 {
            for index in 0..<1_000 { spin &+= UInt64(index) &* 2_654_435_761 }
            dutyCycle.restIfDue()
        }
        let cpu = ThreadCPUClock.micros() - cpuStarted
        let wall = WallClock.micros() - wallStarted
        #expect(spin != 1)
        #expect(wall >= cpu + 3 * (cpu - SnapshotDutyCycle.burstMicros - 1_000), "\(cpu) µs of CPU took \(wall) µs")
    }
}
