import Synchronization

/// The running effect tasks of one ``EffectRuntime``: by task id, by cancel id and by group.
///
/// Not generic, on purpose, and neither are its methods: the runtime is generic over the flow's
/// event and compiled without knowing it, and generic code there (a lock-protected state, a
/// `some Sequence` parameter) costs a type-metadata look-up on every call. One lock guards everything here; a task's life
/// takes it twice (``register(_:id:cancelIDs:group:)`` and ``unregister(_:)``), and whether its body
/// has begun is an atomic counter that only the test store waits on.
final class EffectRegistry: Sendable {
    private struct Entry {
        var task: Task<Void, Never>
        var cancelIDs: SmallList<CancelID>
        var group: EffectGroup
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var byCancelID: [CancelID: TaskIDSet] = [:]
        /// Tasks that ended before their registration: a task runs from the moment it is created.
        var endedUnregistered: Set<UInt64> = []
        var isShutDown = false
        var startWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let nextTaskID = Atomic<UInt64>(0)
    /// Tasks created whose body has not begun to run.
    private let unstartedCount = Atomic<Int>(0)
    /// Set once, by ``shutDown()``; read without the lock to avoid creating tasks after it.
    private let isShutDownFlag = Atomic<Bool>(false)

    var isShutDown: Bool { isShutDownFlag.load(ordering: .acquiring) }

    /// A fresh task id, counted as not yet started.
    func makeTaskID() -> UInt64 {
        unstartedCount.add(1, ordering: .relaxed)
        return nextTaskID.add(1, ordering: .relaxed).oldValue
    }

    /// Records a created task. Cancels it at once if the runtime has shut down or its group was
    /// cancelled meanwhile; forgets it if it already ended.
    func register(_ task: Task<Void, Never>, id taskID: UInt64, cancelIDs: SmallList<CancelID>, group: EffectGroup) {
        let cancelNow = state.withLock { state -> Bool in
            if state.endedUnregistered.remove(taskID) != nil { return false }
            state.entries[taskID] = Entry(task: task, cancelIDs: cancelIDs, group: group)
            for id in cancelIDs { state.byCancelID[id, default: TaskIDSet()].insert(taskID) }
            return state.isShutDown
        }
        // Read after the insertion: a group cancelled before it is seen here, one cancelled after it
        // finds the entry (EffectGroup sets its flag before it asks for its members to be cancelled).
        if cancelNow || group.isCancelled { task.cancel() }
    }

    /// Called by a task when its body begins.
    func markStarted() {
        guard unstartedCount.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        let waiters = state.withLock { state in
            defer { state.startWaiters = [] }
            return state.startWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Called by a task when it ends.
    func unregister(_ taskID: UInt64) {
        let group = state.withLock { state -> EffectGroup? in
            guard let entry = state.entries.removeValue(forKey: taskID) else {
                state.endedUnregistered.insert(taskID)
                return nil
            }
            for id in entry.cancelIDs {
                guard var members = state.byCancelID.removeValue(forKey: id) else { continue }
                members.remove(taskID)
                if !members.isEmpty { state.byCancelID[id] = members }
            }
            return entry.group
        }
        group?.leave(taskID)
    }

    // MARK: Cancelling

    /// Cancels every task marked with one of `ids`.
    func cancel(ids: SmallList<CancelID>) {
        let tasks = state.withLock { state -> SmallList<Task<Void, Never>> in
            var tasks = SmallList<Task<Void, Never>>()
            for id in ids {
                // Cancelled tasks leave the index at once: they may take a while to unwind, and a
                // later cancel of the same id must not walk them again.
                guard let members = state.byCancelID.removeValue(forKey: id) else { continue }
                for taskID in members {
                    if let task = state.entries[taskID]?.task { tasks.append(task) }
                }
            }
            return tasks
        }
        // Outside the lock: cancellation handlers run synchronously and may call back in.
        for task in tasks { task.cancel() }
    }

    /// Cancels the tasks with the given ids.
    func cancel(taskIDs: TaskIDSet) {
        let tasks = state.withLock { state in
            var tasks = SmallList<Task<Void, Never>>()
            for taskID in taskIDs {
                if let task = state.entries[taskID]?.task { tasks.append(task) }
            }
            return tasks
        }
        for task in tasks { task.cancel() }
    }

    /// Cancels every task.
    func cancelAll() {
        let tasks = state.withLock { state in
            // As for a cancel by id: they leave the index at once, however long they take to unwind.
            state.byCancelID.removeAll()
            return state.entries.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }

    /// Cancels every task; tasks registered from now on are cancelled at once.
    func shutDown() {
        isShutDownFlag.store(true, ordering: .releasing)
        state.withLock { $0.isShutDown = true }
        cancelAll()
    }

    // MARK: Inspection

    var count: Int {
        state.withLock { $0.entries.count }
    }

    /// The cancel ids that mark running work, each with the ownership term of its tasks' group
    /// (the latest, when several tasks share an id).
    var activeTerms: [CancelID: UInt64] {
        state.withLock { state in
            var terms: [CancelID: UInt64] = [:]
            for (id, members) in state.byCancelID {
                for taskID in members {
                    if let entry = state.entries[taskID] { terms[id] = max(terms[id] ?? 0, entry.group.term) }
                }
            }
            return terms
        }
    }

    var activeCancelIDs: Set<CancelID> {
        state.withLock { Set($0.byCancelID.keys) }
    }

    func cancelIDs(where predicate: (CancelID) -> Bool) -> SmallList<CancelID> {
        state.withLock { state in SmallList(contentsOf: state.byCancelID.keys.lazy.filter(predicate)) }
    }

    /// Suspends until the body of every created task has begun to run.
    func waitUntilStarted() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let started = state.withLock { state in
                // Checked under the lock: `markStarted` takes it after the count reaches zero, so it
                // either sees this waiter or this check sees zero.
                guard unstartedCount.load(ordering: .acquiring) > 0 else { return true }
                state.startWaiters.append(continuation)
                return false
            }
            if started { continuation.resume() }
        }
    }

    /// Suspends until no task is running.
    func waitUntilIdle() async {
        while true {
            guard let group = state.withLock({ $0.entries.values.first?.group }) else { return }
            await group.waitUntilFinished()
        }
    }
}
