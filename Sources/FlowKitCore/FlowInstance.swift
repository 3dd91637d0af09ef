import Dependencies

/// The serial heart of one flow instance: its state, its reducer and its effects.
///
/// A `FlowInstance` is not thread-safe and not `Sendable`: it belongs to one serial owner (a
/// ``FlowStore`` actor, the test store, a cluster node's apply loop), which calls ``apply(_:mode:group:)``
/// for one event at a time. Because the reducer is synchronous and `apply` never suspends, two
/// reducers can never interleave and events are never reordered, whatever the owner's callers do.
package final class FlowInstance<F: Flow> {
    package let flow: F
    package private(set) var state: F.State
    /// What runs the instance's effects: a store's, given when it is made; a cluster replica's,
    /// made when its first effect starts (``applyEntry(_:stamp:mode:term:runtime:)``), so that a
    /// million instances that never ran one hold none.
    package private(set) var runtime: EffectRuntime<F.Event>?
    /// The dependencies reducers and effects see, captured when the owner was created.
    package let dependencies: DependencyValues
    /// The draws of the entry being reduced (``EntryStamp``), reset for each one: an owner that
    /// reduces its instances one at a time may give them all one.
    private let entropy: EntryEntropy

    package init(flow: F, state: F.State, dependencies: DependencyValues, runtime: EffectRuntime<F.Event>?, entropy: EntryEntropy = EntryEntropy()) {
        self.flow = flow
        self.state = state
        self.dependencies = dependencies
        self.runtime = runtime
        self.entropy = entropy
    }

    /// The runtime, made by `make` if the instance has none yet.
    private func runtime(_ make: () -> EffectRuntime<F.Event>) -> EffectRuntime<F.Event> {
        if let runtime { return runtime }
        let made = make()
        runtime = made
        return made
    }

    /// The runtime a store gave: `apply` is a store's, which always has one.
    private func givenRuntime() -> EffectRuntime<F.Event> {
        guard let runtime else { preconditionFailure("FlowInstance.apply needs the runtime given at init; replicas use applyEntry") }
        return runtime
    }

    /// Applies `event`, then every event its effect sends synchronously (`.send`), first in first out,
    /// before returning.
    ///
    /// - Parameters:
    ///   - event: The event to reduce.
    ///   - mode: Whether to run the effects' work (``EffectRuntime/Mode/origin``) or only evaluate
    ///     what every replica must (``EffectRuntime/Mode/replica``).
    ///   - group: The group new effect tasks join; `nil` creates one on the first task.
    /// - Returns: The group the effects joined, or `nil` when no effect task was started.
    ///   - stamp: The entry being reduced: what the reducer's `uuid`, `date`, random numbers and
    ///     clocks derive from (`DependencyValues.deriveReducerValuesFromEntries()`).
    @discardableResult
    package func apply(
        _ event: F.Event,
        stamp: EntryStamp,
        mode: EffectRuntime<F.Event>.Mode = .origin,
        group: EffectGroup? = nil
    ) -> EffectGroup? {
        // No empty closure as a default `didReduce`: a generic closure value is allocated per call.
        apply(event, stamp: stamp, mode: mode, group: group, notifying: nil)
    }

    /// Applies `event` and its synchronous follow-ups like ``apply(_:mode:group:)``, calling
    /// `didReduce` after each reduced event with that event and the state it produced.
    @discardableResult
    package func apply(
        _ event: F.Event,
        stamp: EntryStamp,
        mode: EffectRuntime<F.Event>.Mode = .origin,
        group: EffectGroup? = nil,
        didReduce: (F.Event, F.State) -> Void
    ) -> EffectGroup? {
        withoutActuallyEscaping(didReduce) { didReduce in
            apply(event, stamp: stamp, mode: mode, group: group, notifying: didReduce)
        }
    }

    /// Reduces `event` from `state` twice, each time with the entry's draws from the start, and
    /// returns both states: a reducer that reads nothing but its state, its event and its
    /// dependencies gives the same state both times. Nothing changes and no effect starts; the
    /// entry-derived `uuid`, `date`, random numbers and clocks stand in for any the owner set
    /// (a test's `.incrementing` generator is not advanced by the check).
    package func reduceTwice(_ event: F.Event, stamp: EntryStamp) -> (F.State, F.State) {
        func once() -> F.State {
            var copy = state
            entropy.reset(stamp)
            withDependencies { $0.deriveReducerValuesFromEntries() } operation: {
                _ = ReducingEntry.with(entropy) { flow.reduce(into: &copy, event: event) }
            }
            return copy
        }
        return (once(), once())
    }

    private func reduce(_ event: F.Event) -> Effect<F.Event> {
        ReducingEntry.with(entropy) { flow.reduce(into: &state, event: event) }
    }

    private func apply(
        _ event: F.Event,
        stamp: EntryStamp,
        mode: EffectRuntime<F.Event>.Mode,
        group: EffectGroup?,
        notifying didReduce: ((F.Event, F.State) -> Void)?
    ) -> EffectGroup? {
        // Follow-ups (`.send`) are part of the entry: they draw on after it, in order.
        entropy.reset(stamp)
        let effect = reduce(event)
        didReduce?(event, state)
        // The common case, a reducer that returns `.none`, touches nothing else.
        guard !effect.isNone else { return group }
        // Effect tasks bind the owner's dependencies. Reducers need no binding of their own: the
        // flow was built inside the owner's scope, so its `@Dependency` properties carry its values.
        var scope = EffectRuntime<F.Event>.Scope(mode: mode, group: group, dependencies: dependencies)
        start(effect, in: &scope, runtime: givenRuntime(), notifying: didReduce)
        return scope.group
    }

    /// Starts `effect`, then reduces the events it sends synchronously (`.send`) in order, each
    /// before the next event from outside, starting their effects too.
    private func start(
        _ effect: Effect<F.Event>, in scope: inout EffectRuntime<F.Event>.Scope, runtime: EffectRuntime<F.Event>,
        notifying didReduce: ((F.Event, F.State) -> Void)?, reducingSends: Bool = true
    ) {
        runtime.start(effect, in: &scope)
        guard reducingSends else { return }
        var cursor = 0
        while cursor < scope.followUps.count {
            let next = scope.followUps[cursor]
            cursor += 1
            let effect = reduce(next)
            didReduce?(next, state)
            if !effect.isNone { runtime.start(effect, in: &scope) }
        }
    }

    /// Applies `event` as an entry of a replicated log, whose effects' tasks form a group under
    /// `term` (the entry's seq).
    ///
    /// - Parameter runtime: Makes the instance's runtime, if it has none yet and the effect is not `.none`.
    /// - Returns: What its effects did that every replica sees alike (``EffectOutline``).
    package func applyEntry(
        _ event: F.Event, stamp: EntryStamp, mode: EffectRuntime<F.Event>.Mode, term: UInt64, runtime make: () -> EffectRuntime<F.Event>
    ) -> EffectOutline {
        entropy.reset(stamp)
        let effect = reduce(event)
        guard !effect.isNone else { return EffectOutline() }
        var scope = EffectRuntime<F.Event>.Scope(mode: mode, dependencies: dependencies, term: term)
        start(effect, in: &scope, runtime: runtime(make), notifying: nil)
        return EffectOutline(scope)
    }

    /// Continues the effects another process ran (a takeover): `derive` returns, from the state,
    /// the effects that should be running, and they start as an entry's under `term` (the
    /// takeover's seq); events they send synchronously are reduced like an entry's. `derive` sees
    /// the owner's dependencies, with `uuid`, `date` and random numbers drawn from the entry, as
    /// a reducer does.
    ///
    /// - Parameter keep: Whether a `.cancellable` part of what `derive` returns may start: only
    ///   work whose id still marks work is continued (a cancelled effect is not started again).
    /// - Returns: What the effects did, as ``applyEntry(_:stamp:mode:term:)`` says.
    /// - Parameter unmarked: Whether work outside any `.cancellable` starts too.
    /// - Parameter reducingSends: `false` restarts only the work, for a process that learns from a
    ///   snapshot that it owns the instance's effects: what they sent at once was reduced when the
    ///   takeover was applied, and is in the snapshot's state.
    package func resume(
        derive: (F.State) -> Effect<F.Event>, keep: (CancelID) -> Bool, unmarked: Bool = true, stamp: EntryStamp, mode: EffectRuntime<F.Event>.Mode,
        term: UInt64, reducingSends: Bool = true, runtime make: () -> EffectRuntime<F.Event>
    ) -> EffectOutline {
        entropy.reset(stamp)
        let current = state
        let effect = withDependencies { $0 = dependencies } operation: {
            ReducingEntry.with(entropy) { derive(current) }
        }.keepingCancellables(where: keep, unmarked: unmarked)
        guard !effect.isNone else { return EffectOutline() }
        var scope = EffectRuntime<F.Event>.Scope(mode: mode, dependencies: dependencies, term: term)
        start(effect, in: &scope, runtime: runtime(make), notifying: nil, reducingSends: reducingSends)
        return EffectOutline(scope)
    }

    /// Replaces the state wholesale: a cluster node restoring a snapshot. Not for flows' own use.
    package func restore(_ state: F.State) {
        self.state = state
    }
}

/// What an entry's effects did that every replica of an instance sees alike, whether it runs them
/// or not: whether they had async work, and which cancel ids started or stopped marking work.
package struct EffectOutline {
    package var hasWork = false
    package var idChanges: [(id: CancelID, started: Bool)] = []

    init() {}

    init<Event>(_ scope: EffectRuntime<Event>.Scope) {
        hasWork = scope.hasWork
        idChanges = scope.idChanges
    }
}
