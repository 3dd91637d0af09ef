import Synchronization

/// The effects started by one emitted event, together with the effects of the events they sent.
///
/// ``EmitTask`` waits on and cancels a group. Membership is tracked by task id; a member leaves when
/// its task ends, and waiters resume when the group is empty.
package final class EffectGroup: Sendable {
    private struct State {
        var members = TaskIDSet()
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Set before the members are cancelled, and never cleared: the registry reads it without a lock
    /// when it records a task that joined just before the cancel.
    private let cancelled = Atomic<Bool>(false)
    private weak let registry: EffectRegistry?
    /// The ownership term its effects run under in a cluster: the seq of the entry that started
    /// them, or of the takeover that moved them here; 0 outside a cluster. Their submissions carry
    /// it, and the coordinator refuses those of a term an instance's takeover ended.
    package let term: UInt64

    init(registry: EffectRegistry, term: UInt64 = 0) {
        self.registry = registry
        self.term = term
    }

    /// Adds a task about to be created; returns `false`, adding nothing, when the group was cancelled.
    func join(_ taskID: UInt64) -> Bool {
        guard !isCancelled else { return false }
        state.withLock { $0.members.insert(taskID) }
        return true
    }

    func leave(_ taskID: UInt64) {
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
        cancelled.load(ordering: .acquiring)
    }

    package func cancel() {
        cancelled.store(true, ordering: .releasing)
        let members = state.withLock { $0.members }
        registry?.cancel(taskIDs: members)
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
