import Synchronization
import ZeroMQ

/// Runs `body` every `interval` until the task is cancelled.
func every(_ interval: Duration, _ body: () async -> Void) async {
    while !Task.isCancelled {
        do {
            try await Task.sleep(for: interval)
        } catch {
            return
        }
        await body()
    }
}

/// Runs `body` every `interval` until the task is cancelled or the loop stops, timed by the I/O
/// loop itself (``IOLoop/sleep(until:)``): a task that prefers the loop wakes on its thread in the
/// turn the tick falls in, where `Task.sleep` would wake a thread of the pool first and hand the
/// task over. Ticks keep to a grid (`interval` after the previous tick, not after `body`).
func every(_ interval: Duration, on loop: IOLoop, _ body: () async -> Void) async {
    var next = ContinuousClock.now + interval
    while !Task.isCancelled {
        do {
            try await loop.sleep(until: next)
        } catch {
            return
        }
        await body()
        next += interval
        // Fell behind by more than a tick (the process was stopped): start from now.
        if next < .now { next = .now + interval }
    }
}

/// A one-way latch: `wait` returns once `signal` has been called, or the waiting task is cancelled.
final class StopSignal: Sendable {
    private let state = Mutex<(signalled: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func signal() {
        let waiters = state.withLock { state in
            state.signalled = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isSignalled: Bool { state.withLock { $0.signalled } }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.signalled { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}

/// The duration in whole microseconds, the unit of every timestamp on the wire.
extension Duration {
    var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}
