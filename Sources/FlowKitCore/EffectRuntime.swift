import Dependencies

/// Interprets the effects of one flow instance: starts their tasks, tracks them by cancel id and by
/// emitted event, and cancels them.
///
/// The owner (a ``FlowStore``, the test store, a cluster node) calls ``start(_:in:)`` from its own
/// serial context, right after the reducer returned. Everything synchronous in the effect happens
/// before `start` returns, in tree order: cancels take effect, `cancelInFlight` cancels the old
/// effect, and sent events are collected for the owner to process next. Async work starts as tasks
/// that are registered *before* `start` returns, so a cancel processed afterwards always finds them,
/// even if their body has not begun to run.
///
/// In ``Mode/replica`` the runtime evaluates only the deterministic, synchronous part of an effect,
/// which every replica of a flow instance must see: `cancel(id:)`, `cancelInFlight` and `.send`. It
/// starts no work; that belongs to the node where the event originated.
package final class EffectRuntime<Event: Sendable>: Sendable {
    /// How much of an effect to carry out.
    package enum Mode: Sendable {
        /// Run everything: this process originated the event.
        case origin
        /// Evaluate cancellations and synchronous sends only: another process runs the work.
        case replica
    }

    /// Where a running effect's events go, and which group the effects they cause belong to.
    package typealias Deliver = @Sendable (_ event: Event, _ group: EffectGroup) async -> Void

    let tasks = EffectRegistry()
    private let deliver: Deliver
    private let reportFailure: @Sendable (EffectFailure) -> Void
    private let cancelFromTask: (@Sendable ([CancelID], EffectGroup) async -> Void)?
    package let context = EffectContext()

    /// - Parameters:
    ///   - deliver: Carries an event sent by a running effect back to the owner.
    ///   - reportFailure: Called for an error an effect threw without a `catch:` handler.
    ///   - cancelFromTask: Carries out a `.cancel(id:)` reached inside running work (after an async
    ///     step of a concatenation), with the group of the work that reached it. `nil` cancels
    ///     locally; a cluster node routes it through the order instead, so that every replica sees it.
    package init(
        deliver: @escaping Deliver,
        reportFailure: @escaping @Sendable (EffectFailure) -> Void,
        cancelFromTask: (@Sendable ([CancelID], EffectGroup) async -> Void)? = nil
    ) {
        self.deliver = deliver
        self.reportFailure = reportFailure
        self.cancelFromTask = cancelFromTask
    }

    // MARK: Starting effects

    /// Starts `effect`; see the type's documentation for what happens synchronously.
    package func start(_ effect: Effect<Event>, in scope: inout Scope) {
        walk(effect, cancelIDs: SmallList(), scope: &scope)
    }

    private func walk(_ effect: Effect<Event>, cancelIDs: SmallList<CancelID>, scope: inout Scope) {
        switch effect.operation {
        case .none:
            return
        case .send(let event):
            scope.followUps.append(event)
        case .cancel(let ids):
            cancel(ids: ids)
            for id in ids { scope.idChanges.append((id, false)) }
        case .cancellable(let inner, let id, let cancelInFlight):
            if cancelInFlight {
                tasks.cancel(ids: SmallList(id))
                scope.idChanges.append((id, false))
            }
            let workBefore = scope.work
            walk(inner, cancelIDs: cancelIDs.appending(id), scope: &scope)
            if scope.work > workBefore { scope.idChanges.append((id, true)) }
        case .merge(let effects):
            for effect in effects { walk(effect, cancelIDs: cancelIDs, scope: &scope) }
        case .concatenate(let effects):
            walkSequence(effects[...], cancelIDs: cancelIDs, scope: &scope)
        case .run, .deferred:
            // A deferred effect consults runtime-held state (a throttle window, the clock) that
            // differs between processes, so it is treated like async work: the origin runs it.
            scope.work += 1
            guard scope.mode == .origin else { return }
            spawn(effect, cancelIDs: cancelIDs, scope: &scope)
        }
    }

    /// Carries out the synchronous prefix of a concatenation now; the rest runs in one task that
    /// starts each effect when the one before it has finished.
    private func walkSequence(
        _ effects: ArraySlice<Effect<Event>>,
        cancelIDs: SmallList<CancelID>,
        scope: inout Scope
    ) {
        var remaining = effects
        while let first = remaining.first {
            guard first.isSynchronous else {
                // What follows an async effect is the origin's business, when it gets there.
                scope.work += 1
                guard scope.mode == .origin else { return }
                spawn(Effect(operation: .concatenate(Array(remaining))), cancelIDs: cancelIDs, scope: &scope)
                return
            }
            walk(first, cancelIDs: cancelIDs, scope: &scope)
            remaining = remaining.dropFirst()
        }
    }

    // MARK: Tasks

    private func spawn(_ effect: Effect<Event>, cancelIDs: SmallList<CancelID>, scope: inout Scope) {
        let group: EffectGroup
        if let existing = scope.group {
            group = existing
        } else {
            group = makeGroup(term: scope.term)
            scope.group = group
        }
        spawn(effect, cancelIDs: cancelIDs, group: group, dependencies: scope.dependencies)
    }

    package func makeGroup(term: UInt64 = 0) -> EffectGroup {
        EffectGroup(registry: tasks, term: term)
    }

    /// Starts a task for `effect`, registered under `cancelIDs` and in `group`, unless the runtime has
    /// shut down or the group was cancelled.
    ///
    /// The task binds `dependencies` itself rather than inheriting a binding made around its
    /// creation: copying task-local values into a new task allocates, binding one in a running task
    /// does not.
    @discardableResult
    private func spawn(
        _ effect: Effect<Event>,
        cancelIDs: SmallList<CancelID>,
        group: EffectGroup,
        dependencies: DependencyValues? = nil
    ) -> Task<Void, Never>? {
        guard !tasks.isShutDown else { return nil }
        let taskID = tasks.makeTaskID()
        guard group.join(taskID) else {
            tasks.markStarted()  // it never will
            return nil
        }
        let task: Task<Void, Never>
        if case .run(let run) = effect.operation {
            // The common case, a plain `.run`: the task holds the work itself, not the effect tree.
            task = Task(priority: run.priority) {
                self.tasks.markStarted()
                await Self.binding(dependencies) { await self.perform(run, group: group) }
                self.tasks.unregister(taskID)
            }
        } else {
            task = Task {
                self.tasks.markStarted()
                await Self.binding(dependencies) { await self.execute(effect, cancelIDs: cancelIDs, group: group) }
                self.tasks.unregister(taskID)
            }
        }
        tasks.register(task, id: taskID, cancelIDs: cancelIDs, group: group)
        return task
    }

    // MARK: Running effects inside a task

    /// Runs `body` with `dependencies` bound for it, when there are any.
    private static func binding(_ dependencies: DependencyValues?, _ body: () async -> Void) async {
        guard let dependencies else { return await body() }
        await DependencyValues.$_current.withValue(dependencies, operation: body)
    }

    /// Runs `effect` to completion in the current task.
    ///
    /// Each kind of effect runs in a function of its own, kept out of line: an async function's frame
    /// is as large as its largest case needs, and the task allocator takes a fresh slab from malloc
    /// for a frame that does not fit the current one.
    private func execute(_ effect: Effect<Event>, cancelIDs: SmallList<CancelID>, group: EffectGroup) async {
        switch effect.operation {
        case .none:
            return
        case .send(let event):
            await makeSend(group: group)(event)
        case .cancel(let ids):
            await cancelFromRunningTask(ids, group: group)
        case .run(let run):
            await perform(run, group: group)
        case .cancellable(let inner, let id, let cancelInFlight):
            await executeCancellable(inner, id: id, cancelInFlight: cancelInFlight, cancelIDs: cancelIDs, group: group)
        case .merge(let effects):
            await executeConcurrently(effects, cancelIDs: cancelIDs, group: group)
        case .concatenate(let effects):
            await executeInOrder(effects, cancelIDs: cancelIDs, group: group)
        case .deferred(let build):
            await execute(build(context), cancelIDs: cancelIDs, group: group)
        }
    }

    @inline(never)
    private func perform(_ run: Effect<Event>.Run, group: EffectGroup) async {
        let send = makeSend(group: group)
        do {
            try await run.body(send)
        } catch is CancellationError {
            return
        } catch {
            if let handler = run.handler {
                await handler(error, send)
            } else {
                reportFailure(EffectFailure(error: error, origin: run.origin))
            }
        }
    }

    @inline(never)
    private func cancelFromRunningTask(_ ids: SmallList<CancelID>, group: EffectGroup) async {
        if let cancelFromTask {
            await cancelFromTask(Array(ids), group)
        } else {
            cancel(ids: ids)
        }
    }

    @inline(never)
    private func executeCancellable(
        _ inner: Effect<Event>,
        id: CancelID,
        cancelInFlight: Bool,
        cancelIDs: SmallList<CancelID>,
        group: EffectGroup
    ) async {
        if cancelInFlight { tasks.cancel(ids: SmallList(id)) }
        // A child task, so that cancelling `id` stops this part without stopping the rest.
        guard let child = spawn(inner, cancelIDs: cancelIDs.appending(id), group: group) else { return }
        await withTaskCancellationHandler {
            await child.value
        } onCancel: {
            child.cancel()
        }
    }

    @inline(never)
    private func executeConcurrently(
        _ effects: [Effect<Event>],
        cancelIDs: SmallList<CancelID>,
        group: EffectGroup
    ) async {
        await withDiscardingTaskGroup { tasks in
            for effect in effects {
                tasks.addTask { await self.execute(effect, cancelIDs: cancelIDs, group: group) }
            }
        }
    }

    @inline(never)
    private func executeInOrder(_ effects: [Effect<Event>], cancelIDs: SmallList<CancelID>, group: EffectGroup) async {
        for effect in effects {
            guard !Task.isCancelled else { return }
            await execute(effect, cancelIDs: cancelIDs, group: group)
        }
    }

    private func makeSend(group: EffectGroup) -> Send<Event> {
        Send(deliver: deliver, group: group)
    }

    // MARK: Cancelling

    /// Cancels every in-flight effect marked with one of `ids`.
    package func cancel(ids: SmallList<CancelID>) {
        tasks.cancel(ids: ids)
    }

    /// Cancels every in-flight effect whose cancel id satisfies `predicate`; an operator's cancel by
    /// name uses this.
    package func cancel(where predicate: (CancelID) -> Bool) {
        tasks.cancel(ids: tasks.cancelIDs(where: predicate))
    }

    /// Cancels every in-flight effect.
    package func cancelAll() {
        tasks.cancelAll()
    }

    /// Cancels every in-flight effect and refuses to start new ones.
    package func shutDown() {
        tasks.shutDown()
    }
}
