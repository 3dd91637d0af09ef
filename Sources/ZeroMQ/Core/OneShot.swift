import Synchronization

/// A value that is produced once and awaited by any number of tasks.
///
/// Used where a thread we own (an I/O loop, a `zmq_ctx_term` thread) must hand a result
/// back to async code without blocking a cooperative thread.
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case done(Value)
    }

    private let state = Mutex(State.waiting([]))

    /// Whether ``fulfill(_:)`` has been called.
    var isFulfilled: Bool {
        state.withLock { if case .done = $0 { return true } else { return false } }
    }

    /// Publishes the value and resumes every waiter; later calls are ignored.
    func fulfill(_ value: Value) {
        let waiters: [CheckedContinuation<Value, Never>] = state.withLock { state in
            guard case .waiting(let waiters) = state else { return [] }
            state = .done(value)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    /// Waits for the value.
    func wait() async -> Value {
        await withCheckedContinuation { continuation in
            let ready: Value? = state.withLock { state in
                switch state {
                case .done(let value):
                    return value
                case .waiting(var waiters):
                    waiters.append(continuation)
                    state = .waiting(waiters)
                    return nil
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
