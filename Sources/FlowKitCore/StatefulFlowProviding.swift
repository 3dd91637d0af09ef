/// A flow as an actor: its state changes only through the events emitted to it, and observers
/// subscribe to the changes.
///
/// This is the shape of FlowKit's original protocol, and of the article <doc:IntroductionToFlows>: write
/// a flow by hand as an actor with `state`, `stateSubscribers` and `emit(_:)`, or use a
/// ``FlowStore``, which conforms for any ``Flow`` with a hashable state, or a cluster's replicated
/// instance (`ClusterClient.flow(_:_:)` in FlowKitCluster), which conforms too.
///
/// ```swift
/// public actor MovieListFlow: StatefulFlowProviding {
///     public enum State: Equatable, Hashable { case initial, loaded([Movie]), errored(MovieError) }
///     public enum Event { case fetchMovies(page: Int), reset }
///
///     public var state: State { internalState }
///     public var stateSubscribers = [((State) -> Void)]()
///     private var internalState = State.initial {
///         didSet { stateSubscribers.forEach { callback in callback(internalState) } }
///     }
///
///     public func emit(_ event: Event) async { … }
/// }
///
/// let flow = MovieListFlow()
/// await flow.subscribe { state in print(state) }
/// await flow.emit(.fetchMovies(page: 1))
/// ```
///
/// A hand-written actor flow runs in one process. It cannot be replicated: its `emit` may run any
/// async code, which every replica would run again, differently. To replicate a flow, write it as
/// a ``Flow`` (a pure reducer that returns effects) and run it in a ``FlowStore`` or a cluster.
public protocol StatefulFlowProviding: Actor {
    /// The states the flow can be in.
    associatedtype State: Equatable & Hashable

    /// The events that change the state.
    associatedtype Event

    /// The current state. Only `emit(_:)` changes it.
    var state: State { get }

    /// Called with the new state after every change. Add to it with `subscribe(perform:)`.
    var stateSubscribers: [((State) -> Void)] { get set }

    /// Emits an event: the flow changes its state in response.
    func emit(_ event: Event) async
}

extension StatefulFlowProviding {
    /// Calls `handler` with the state after every change, on the flow's actor, in order.
    ///
    /// - Important: The handler must not emit to the flow: that would loop.
    public func subscribe(perform handler: @escaping (State) -> Void) {
        stateSubscribers.append(handler)
    }

    /// Calls `handler` with the state after every change, one change at a time and in order, off
    /// the flow's actor; for handlers that need to `await` (updating another actor, a view model
    /// on the main actor).
    ///
    /// - Important: The handler must not emit to the flow: that would loop.
    public func subscribe(perform handler: @escaping @Sendable (State) async -> Void) where State: Sendable {
        let (changes, continuation) = AsyncStream.makeStream(of: State.self)
        stateSubscribers.append { state in continuation.yield(state) }
        // The stream ends when the flow is released (its subscribers, and the continuation with
        // them), and the task with it.
        Task {
            for await state in changes { await handler(state) }
        }
    }
}
