import Synchronization

/// The effects started by one emitted event, together with the effects of the events they sent.
///
/// ``EmitTask`` waits on and cancels a group. Membership is tracked by task id; a member leaves when
/// its task ends, and waiters resume when the group is empty.
package final class EffectGroup: Sendable {
    private struct State {
        var members: Set<UInt64> = []
        var isCancelled = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let cancelMembers: @Sendable (Set<UInt64>) -> Void

    package init(cancelMembers: @escaping @Sendable (Set<UInt64>) -> Void) {
        self.cancelMembers = cancelMembers
    }

    /// Adds a task; returns `false` when the group was cancelled, so the caller cancels it at once.
    package func join(_ taskID: UInt64) -> Bool {
        state.withLock { state in
            state.members.insert(taskID)
            return !state.isCancelled
        }
    }

    package func leave(_ taskID: UInt64) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.members.remove(taskID)
            guard state.members.isEmpty else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    package var isFinished: Bool {
        state.withLock { $0.members.isEmpty }
    }

    package var isCancelled: Bool {
        state.withLock { $0.isCancelled }
    }

    package func cancel() {
        let members = state.withLock { state in
            state.isCancelled = true
            return state.members
        }
        cancelMembers(members)
    }

    /// Suspends until every member has ended.
    package func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state in
                if state.members.isEmpty { return true }
                state.waiters.append(continuation)
                return false
            }
            if finished { continuation.resume() }
        }
    }
}
