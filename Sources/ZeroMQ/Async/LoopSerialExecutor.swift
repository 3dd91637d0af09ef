import Dispatch

/// An ``IOLoop``'s thread as a `SerialExecutor`: an actor that names it as its executor runs on
/// the loop's thread, between polls, like a task that prefers the loop.
///
/// Such an actor can be entered synchronously from the loop's thread, with `assumeIsolated`: from
/// a receive handler (``AsyncSocket/handleReceived(_:)``), where a message reaches the actor in the
/// loop turn that read it, with no task, continuation or job in between.
///
/// ```swift
/// actor Server {
///     nonisolated let unownedExecutor: UnownedSerialExecutor
///     init(loop: IOLoop) { unownedExecutor = loop.serialExecutor.asUnownedSerialExecutor() }
///     func handle(_ batch: [Message]) { ... }
/// }
/// try await socket.handleReceived { batch in server.assumeIsolated { $0.handle(batch) } }
/// ```
///
/// Once the loop has stopped, the actor's jobs run one at a time on a dispatch queue instead, so
/// calls made while the loop shuts down still finish.
public final class LoopSerialExecutor: SerialExecutor, Sendable {
    let queue: LoopCommandQueue
    /// Where the actor's jobs run after the loop has stopped, one at a time.
    private let fallback = DispatchQueue(label: "flowkit.zmq.loop-fallback")
    private let onFallback = DispatchSpecificKey<Bool>()

    init(queue: LoopCommandQueue) {
        self.queue = queue
        fallback.setSpecific(key: onFallback, value: true)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        guard !queue.enqueue(LoopJob(job: job, isolated: true)) else { return }
        let executor = asUnownedSerialExecutor()
        fallback.async { job.runSynchronously(on: executor) }
    }

    /// Whether the caller runs isolated to this executor: on the loop's thread, or in a job the
    /// stopped loop left to the fallback queue.
    public func isIsolatingCurrentContext() -> Bool? {
        isCurrent
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on the I/O loop's thread")
    }

    private var isCurrent: Bool {
        queue.wakeup.isLoopThread || DispatchQueue.getSpecific(key: onFallback) == true
    }
}
