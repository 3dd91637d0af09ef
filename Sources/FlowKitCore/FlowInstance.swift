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
    package let runtime: EffectRuntime<F.Event>
    /// The dependencies reducers and effects see, captured when the owner was created.
    package let dependencies: DependencyValues

    package init(flow: F, state: F.State, dependencies: DependencyValues, runtime: EffectRuntime<F.Event>) {
        self.flow = flow
        self.state = state
        self.dependencies = dependencies
        self.runtime = runtime
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
    @discardableResult
    package func apply(
        _ event: F.Event,
        mode: EffectRuntime<F.Event>.Mode = .origin,
        group: EffectGroup? = nil
    ) -> EffectGroup? {
        // No empty closure as a default `didReduce`: a generic closure value is allocated per call.
        apply(event, mode: mode, group: group, notifying: nil)
    }

    /// Applies `event` and its synchronous follow-ups like ``apply(_:mode:group:)``, calling
    /// `didReduce` after each reduced event with that event and the state it produced.
    @discardableResult
    package func apply(
        _ event: F.Event,
        mode: EffectRuntime<F.Event>.Mode = .origin,
        group: EffectGroup? = nil,
        didReduce: (F.Event, F.State) -> Void
    ) -> EffectGroup? {
        withoutActuallyEscaping(didReduce) { didReduce in
            apply(event, mode: mode, group: group, notifying: didReduce)
        }
    }

    private func apply(
        _ event: F.Event,
        mode: EffectRuntime<F.Event>.Mode,
        group: EffectGroup?,
        notifying didReduce: ((F.Event, F.State) -> Void)?
    ) -> EffectGroup? {
        let effect = flow.reduce(into: &state, event: event)
        didReduce?(event, state)
        // The common case, a reducer that returns `.none`, touches nothing else.
        guard !effect.isNone else { return group }
        // Effect tasks bind the owner's dependencies. Reducers need no binding of their own: the
        // flow was built inside the owner's scope, so its `@Dependency` properties carry its values.
        var scope = EffectRuntime<F.Event>.Scope(mode: mode, group: group, dependencies: dependencies)
        runtime.start(effect, in: &scope)
        // Follow-ups (`.send`) are applied in order, each before the next event from outside.
        var cursor = 0
        while cursor < scope.followUps.count {
            let next = scope.followUps[cursor]
            cursor += 1
            let effect = flow.reduce(into: &state, event: next)
            didReduce?(next, state)
            if !effect.isNone { runtime.start(effect, in: &scope) }
        }
        return scope.group
    }

    /// Replaces the state wholesale: a cluster node restoring a snapshot. Not for flows' own use.
    package func restore(_ state: F.State) {
        self.state = state
    }
}
