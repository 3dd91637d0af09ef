#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import ZeroMQ

/// A thread for the work nobody waits for: hashing digests, encoding snapshots and reports. It runs
/// at the lowest CPU priority (nice 19), so on a busy machine the order, the apply path and the
/// answers to clients go first, and this work fills the time they leave.
///
/// A burst of such work at normal priority on one of two cores (a node hashing a thousand
/// instances, the coordinator encoding a snapshot) delayed every message that arrived meanwhile:
/// it set the p99. At nice 19 it still gets a share of a busy CPU (about 1.5 % against one thread
/// at nice 0), so it falls behind under full load but never stops.
///
/// One thread of its own (not a pool thread, which would keep the low priority for whatever it ran
/// next), named for `top -H` and `perf`; jobs run one at a time, in the order they were given.
@_spi(Wire) public final class BackgroundWork: Sendable {
    /// The process's one background thread, started on first use.
    public static let shared = BackgroundWork(name: "flowkit-bg")

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)

    init(name: String) {
        IOThread.start(name: name) { [self] in serve() }
    }

    private func serve() -> Never {
        #if os(Linux)
        // On Linux a nice value belongs to the thread (setpriority(2), "Bugs"): `who` 0 is the
        // calling thread, so this lowers this one only.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
        while true {
            ready.wait()
            let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            job?()
        }
    }

    /// Runs `body` on the background thread, not waiting for it.
    public func start(_ body: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(body) }
        ready.signal()
    }

    /// Runs `body` on the background thread and returns its result.
    public func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            start { continuation.resume(with: Result { try body() }) }
        }
    }
}
