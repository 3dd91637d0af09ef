import Synchronization

/// Requests waiting for their answers, by request id.
final class ReplyWaiters: Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<ClientReply, any Error>
        var deadline: ContinuousClock.Instant
    }

    private let waiters = Mutex<[UInt64: Waiter]>([:])

    func add(_ id: UInt64, _ continuation: CheckedContinuation<ClientReply, any Error>, deadline: ContinuousClock.Instant) {
        waiters.withLock { $0[id] = Waiter(continuation: continuation, deadline: deadline) }
    }

    func take(_ id: UInt64) -> CheckedContinuation<ClientReply, any Error>? {
        waiters.withLock { $0.removeValue(forKey: id) }?.continuation
    }

    func takeAll() -> [CheckedContinuation<ClientReply, any Error>] {
        waiters.withLock { waiters in
            defer { waiters = [:] }
            return waiters.values.map(\.continuation)
        }
    }

    /// Removes and returns the waiters whose deadline has passed.
    func takeOverdue(now: ContinuousClock.Instant) -> [CheckedContinuation<ClientReply, any Error>] {
        waiters.withLock { waiters in
            let overdue = waiters.filter { $0.value.deadline <= now }
            for id in overdue.keys { waiters[id] = nil }
            return overdue.values.map(\.continuation)
        }
    }

    private let progressStreams = Mutex<[UInt64: AsyncStream<ClusterClient.Progress>.Continuation]>([:])

    func addProgress(_ id: UInt64, _ continuation: AsyncStream<ClusterClient.Progress>.Continuation) {
        progressStreams.withLock { $0[id] = continuation }
    }

    func progress(_ id: UInt64) -> AsyncStream<ClusterClient.Progress>.Continuation? {
        progressStreams.withLock { $0[id] }
    }

    func finishProgress() {
        let streams = progressStreams.withLock { streams in
            defer { streams = [:] }
            return Array(streams.values)
        }
        for stream in streams { stream.finish() }
    }
}
