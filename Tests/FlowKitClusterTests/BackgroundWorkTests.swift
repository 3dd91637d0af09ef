@_spi(Wire) @testable import FlowKitCluster
import Glibc
import Synchronization
import Testing

/// The background threads run their jobs at their own priority, in the order they came: digests
/// at `SCHED_IDLE`, snapshots and compaction at nice 19.
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
        #expect(try await BackgroundWork.idle.run { Self.scheduling() }.policy == 5, "the digests' thread")
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
}
