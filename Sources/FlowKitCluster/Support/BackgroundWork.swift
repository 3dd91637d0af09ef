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
/// Work that may lag without harm, digest hashing above all, runs on a second thread, ``idle``,
/// at `SCHED_IDLE`: only when nothing else wants the core, and off it the moment something does.
/// At nice 19 a job that was running kept its core for the rest of its time slice when a loop thread
/// woke; at 20,000 events a second, that hashing put the p99 a seventh above the same run with no
/// hashing at all. A thread of its own, not a policy switched per job: an unprivileged thread may
/// enter `SCHED_IDLE` but not leave it (`RLIMIT_NICE`), and snapshots must not wait behind digests.
///
/// `SCHED_IDLE` has no floor: on a machine kept busy by anything else (a compiler at nice 19 will
/// do), the thread waits minutes, a node's digests never settle and the divergence alarm goes quiet
/// (a test of a million instances timed out beside a release build that way). So a job ``idle`` has
/// not started within ``Floor/patience`` runs on ``shared`` instead, which at nice 19 still gets
/// its small share.
///
/// Each is a thread of its own (not a pool thread, which would keep the low priority for whatever
/// it ran next), named for `top -H` and `perf`; its jobs run one at a time, in the order they came.
@_spi(Wire) public final class BackgroundWork: Sendable {
    /// The process's background thread, at nice 19, started on first use: snapshots, compaction.
    public static let shared = BackgroundWork(name: "flowkit-bg", priority: .background)
    /// The process's idle thread, at `SCHED_IDLE`, started on first use: digests.
    public static let idle = BackgroundWork(name: "flowkit-idle", priority: .idle, floor: Floor(patience: .seconds(2), fallback: shared))

    /// Where a job goes that this thread has not started within `patience`.
    struct Floor: Sendable {
        let patience: Duration
        let fallback: BackgroundWork
    }

    /// How a thread's jobs give way to the rest of the process and the machine.
    public enum Priority: Sendable {
        /// Nice 19: the time the rest leaves, and under full load still a small share (about 1.5 %
        /// of a core against one busy thread), so it falls behind but never stops.
        case background
        /// `SCHED_IDLE`: only a core nothing else wants, given up at once when something does, and
        /// under full load less still (about 0.3 %).
        case idle
    }

    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let ready = DispatchSemaphore(value: 0)
    let floor: Floor?

    init(name: String, priority: Priority, floor: Floor? = nil) {
        self.floor = floor
        IOThread.start(name: name) { [self] in serve(at: priority) }
    }

    private func serve(at priority: Priority) -> Never {
        #if os(Linux)
        // On Linux a nice value and a policy belong to the thread (setpriority(2), "Bugs";
        // sched_setscheduler(2)): `who` and `pid` 0 are the calling thread, so this lowers this one only.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        if priority == .idle {
            var parameters = sched_param(sched_priority: 0)
            _ = sched_setscheduler(0, Self.schedIdle, &parameters)
        }
        #endif
        while true {
            ready.wait()
            let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            job?()
        }
    }

    /// `SCHED_IDLE` from `<linux/sched.h>`, which Glibc's headers do not export without `_GNU_SOURCE`.
    private static let schedIdle: Int32 = 5

    /// Runs `body` on the thread (or the floor's, if this one has not started it in time), not
    /// waiting for it.
    public func start(_ body: @escaping @Sendable () -> Void) {
        guard let floor else { return enqueue(body) }
        let claim = Claim()
        enqueue { if claim.take() { body() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(floor.patience.microseconds))) {
            if claim.take() { floor.fallback.start(body) }
        }
    }

    private func enqueue(_ body: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(body) }
        ready.signal()
    }

    /// A job's one run: the first of its two threads to take it runs it.
    private final class Claim: Sendable {
        private let taken = Atomic<Bool>(false)
        func take() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
    }

    /// Runs `body` on the thread and returns its result.
    public func run<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            start { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the thread and returns its result, and tells `body` through its
    /// ``Abandonment`` when the waiting task is cancelled: a long job (a snapshot of a million
    /// states, seconds at nice 19 on a busy machine) looks now and then and gives up, so a process
    /// that is stopping does not wait for work it will throw away. A job cancelled before it
    /// starts does not run.
    ///
    /// - Throws: `CancellationError` when abandoned, or what `body` throws.
    public func run<Value: Sendable>(abandonable body: @escaping @Sendable (Abandonment) throws -> Value) async throws -> Value {
        let abandonment = Abandonment()
        return try await withTaskCancellationHandler {
            try await run {
                try abandonment.check()
                return try body(abandonment)
            }
        } onCancel: {
            abandonment.abandon()
        }
    }

    /// Whether the task waiting for a job has given up on it (``run(abandonable:)``).
    public final class Abandonment: Sendable {
        private let abandoned = Atomic<Bool>(false)

        public init() {}

        public var isAbandoned: Bool { abandoned.load(ordering: .relaxed) }

        public func abandon() { abandoned.store(true, ordering: .relaxed) }

        /// - Throws: `CancellationError` once abandoned.
        public func check() throws {
            if isAbandoned { throw CancellationError() }
        }
    }
}
