/// A state machine whose state changes only through events.
///
/// A flow declares its `State`, the `Event`s it accepts, and a reducer that applies one event to the
/// state and returns the ``Effect`` to run afterwards. Reducers are pure and deterministic: the same
/// events in the same order give equal states, which is what lets a cluster replicate a flow by
/// replaying one ordered log on every node. Wall-clock reads, randomness and I/O belong in effects,
/// reached through dependencies such as `@Dependency(\.continuousClock)`.
///
/// ```swift
/// struct CounterFlow: Flow {
///     struct State: Codable, Equatable, Sendable { var count = 0 }
///     enum Event: Codable, Equatable, Sendable { case increment, decrement }
///
///     func reduce(into state: inout State, event: Event) -> Effect<Event> {
///         switch event {
///         case .increment: state.count += 1
///         case .decrement: state.count -= 1
///         }
///         return .none
///     }
/// }
/// ```
///
/// A ``FlowStore`` runs one instance of a flow locally; a cluster node runs many, one per address.
public protocol Flow<State, Event>: Sendable {
    /// Everything the flow knows. Only the reducer changes it.
    associatedtype State: Sendable
    /// The inputs the flow reacts to: user intents, effect results, timer ticks.
    associatedtype Event: Sendable

    /// Applies one event to the state and returns the work to do afterwards.
    ///
    /// - Parameters:
    ///   - state: The flow's state, changed in place.
    ///   - event: The event to apply.
    /// - Returns: The effect to run, or ``Effect/none``.
    func reduce(into state: inout State, event: Event) -> Effect<Event>
}

extension Flow {
    /// An event, in TCA's words: FlowKit's flows are reduced over events and emit them, where TCA's
    /// reducers are sent actions. `MyFlow.Action` is `MyFlow.Event`.
    public typealias Action = Event
}
