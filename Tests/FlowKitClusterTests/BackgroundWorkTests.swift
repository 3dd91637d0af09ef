@_spi(Wire) @testable import FlowKitCluster
import Dispatch
import Glibc
import Synchronization
import Testing

/// The background threads run their jobs at their own priority, in the order they came: digests
/// at `SCHED_IDLE`, snapshots and compaction at nice 19; a job the idle thread has not started in
/// time runs at nice 19.
@Suite struct BackgroundWorkTests {
    private struct Scheduling: Equatable, Sendable {
        var policy: Int32
        var nice: Int32
    }

    private static func scheduling() -> Scheduling {
        Scheduling(policy: sched_getscheduler(0), nice: getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    }

    @Test func eachThreadRunsAtItsPriority() async throws {
        let idle = BackgroundWork(name: "flowkit-idle-test", priority: .idle)
        let background = BackgroundWork(name: "flowkit-bg-test", priority: .background)
        #expect(try await idle.run { Self.scheduling() } == Scheduling(policy: 5, nice: 19), "SCHED_IDLE")
        #expect(try await background.run { Self.scheduling() } == Scheduling(policy: SCHED_OTHER, nice: 19))
        // The digests' thread has a floor (a busy test run may starve it past its patience).
        #expect(BackgroundWork.idle.floor?.fallback === BackgroundWork.shared && BackgroundWork.shared.floor == nil)
        #expect(try await BackgroundWork.shared.run { Self.scheduling() }.policy == SCHED_OTHER, "the snapshots' thread")
    }

    @Test func jobsRunInTheOrderTheyCame() async throws {
        let work = BackgroundWork(name: "flowkit-bg-test", priority: .idle)
        let order = Mutex<[Int]>([])
        for index in 0..<20 {
            work.start { order.withLock { $0.append(index) } }
        }
        _ = try await work.run { () }
        #expect(order.withLock { $0 } == Array(0..<20))
    }

    /// A job the idle thread does not start within its patience (here it is held by a job that
    /// waits) runs on the floor's thread, at nice 19, once: not again when the idle thread frees.
    @Test func aJobTheIdleThreadDoesNotStartInTimeRunsOnTheFloor() async throws {
        let fallback = BackgroundWork(name: "flowkit-bg-test", priority: .background)
        let idle = BackgroundWork(name: "flowkit-idle-test", priority: .idle, floor: .init(patience: .milliseconds(300), fallback: fallback))
        // The idle thread must hold the first job. On a machine whose cores are busy (the
        // simulations run beside this test) it may not start it within its patience, and the
        // floor runs it instead, which holds the floor's thread: then release it and try again.
        var attempts = 0
        while true {
            attempts += 1
            let held = Mutex<Scheduling?>(nil)
            let release = DispatchSemaphore(value: 0)
            idle.start {
                held.withLock { $0 = Self.scheduling() }
                release.wait()
            }
            try await eventually("the first job started") { held.withLock { $0 } != nil }
            guard held.withLock({ $0 })?.policy == 5 else {
                release.signal()
                _ = try await fallback.run { () }
                try #require(attempts < 50, "the idle thread never started a job within 300 ms")
                continue
            }
            let runs = Mutex<[Scheduling]>([])
            idle.start { runs.withLock { $0.append(Self.scheduling()) } }
            try await eventually("the second job ran elsewhere") { !runs.withLock { $0 }.isEmpty }
            release.signal()
            // Both threads run whatever came after in order; by then a second run would have happened.
            _ = try await idle.run { () }
            _ = try await fallback.run { () }
            #expect(runs.withLock { $0 } == [Scheduling(policy: SCHED_OTHER, nice: 19)])
            return
        }
    }
}
