import Dependencies
import Foundation
import Logging

/// An actor that runs one instance of a flow: it applies emitted events one at a time, runs their
/// effects, and tells subscribers about every new state.
///
/// ```swift
/// let store = FlowStore(initialState: CounterFlow.State()) { CounterFlow() }
/// await store.emit(.increment)
/// print(await store.state.count)   // 1
/// ```
///
/// Events are processed strictly one at a time, in the order they reach the actor. The reducer is
/// synchronous and the store never suspends while applying an event, so actor re-entrancy cannot
/// interleave two reducers: an effect's `send` that arrives while an emit is being applied waits its
/// turn. Events a reducer returns with ``Effect/send(_:)`` are applied right after the event that
/// returned them, before any event that arrives later.
///
/// Effects end when the store shuts down (``shutDown()``) or is released; a `send` from a cancelled
/// or orphaned effect is dropped.
public actor FlowStore<F: Flow> {
    private let instance: FlowInstance<F>
    /// How many events the store has reduced: the seq of their ``EntryStamp``s.
    private var reduced: UInt64 = 0
    /// The instance's runtime, also held here so that `deinit` (which may not touch the instance)
    /// can stop the effects.
    private let runtime: EffectRuntime<F.Event>
    private let subscribers = SubscriberList<F.State>()
    private let logger: Logger
    private var isShutDown = false
    /// Called with the new state after every change, on the store's executor: the subscribers of
    /// ``StatefulFlowProviding``, which `subscribe(perform:)` adds to.
    public var stateSubscribers: [((F.State) -> Void)] = []

    /// Creates a store, building the flow inside the store's dependency scope.
    ///
    /// - Parameters:
    ///   - initialState: The state before the first event.
    ///   - logger: Where effect failures without a `catch:` handler are reported.
    ///   - onUnhandledEffectError: Called, in addition to the log line, for every error thrown from a
    ///     `.run` effect that has no `catch:` handler. Tests use it to observe failures.
    ///   - flow: Builds the flow; `@Dependency` properties it declares see `prepareDependencies`.
    ///   - prepareDependencies: Overrides dependencies (a test clock, a stub client) for the reducer
    ///     and every effect this store runs. Inside the reducer, `uuid`, `date`, random numbers and
    ///     the clocks' `now` derive from each event's ``EntryStamp`` (its count, and when it
    ///     arrived), as they do on every node of a cluster, unless overridden here
    ///     (`DependencyValues.deriveReducerValuesFromEntries()`); effects get the live values.
    public init(
        initialState: F.State,
        logger: Logger = Logger(label: "flowkit.store"),
        onUnhandledEffectError: @escaping @Sendable (EffectFailure) -> Void = { _ in },
        flow: () -> F,
        withDependencies prepareDependencies: (inout DependencyValues) -> Void = { _ in }
    ) {
        let (flow, dependencies) = withDependencies {
            $0.deriveReducerValuesFromEntries()
            prepareDependencies(&$0)
        } operation: {
            (flow(), DependencyValues._current)
        }
        let weakStore = WeakBox<FlowStore>()
        let runtime = EffectRuntime<F.Event>(
            deliver: { event, group in await weakStore.value?.receive(event, from: group) },
            reportFailure: { failure in
                logger.error(
                    "effect failed without a catch: handler",
                    metadata: [
                        "flowkit.effect.origin": "\(failure.origin.fileID):\(failure.origin.line)",
                        "flowkit.effect.error": "\(failure.error)",
                    ]
                )
                onUnhandledEffectError(failure)
            }
        )
        self.instance = FlowInstance(flow: flow, state: initialState, dependencies: dependencies, runtime: runtime)
        self.runtime = runtime
        self.logger = logger
        weakStore.value = self
    }

    /// Creates a store for a flow value built by the caller.
    public init(initialState: F.State, flow: F, logger: Logger = Logger(label: "flowkit.store")) {
        self.init(initialState: initialState, logger: logger, flow: { flow })
    }

    deinit {
        runtime.shutDown()
        subscribers.finishAll()
    }

    /// The current state.
    public var state: F.State { instance.state }

    /// Applies an event and starts its effects.
    ///
    /// - Parameter event: The event to apply.
    /// - Returns: A handle on the effects the event started (and the effects of the events they send):
    ///   `await store.emit(.runTasks).finish()` keeps them alive for as long as the calling task runs.
    @discardableResult
    public func emit(_ event: F.Event) -> EmitTask {
        guard !isShutDown else {
            logger.debug("event emitted after shutdown was ignored")
            return EmitTask(group: nil)
        }
        return EmitTask(group: apply(event, group: nil))
    }

    /// Applies an event and starts its effects, as TCA's stores spell it: `send` is `emit(_:)`.
    ///
    /// ```swift
    /// .task { await store.send(.view(.runTasks)).finish() }
    /// ```
    @discardableResult
    public func send(_ event: F.Event) -> EmitTask {
        emit(event)
    }

    /// Applies events in order, as if each was emitted in turn, in one hop onto the actor.
    ///
    /// - Parameter events: The events to apply.
    public func emit(contentsOf events: some Sequence<F.Event>) {
        guard !isShutDown else { return }
        for event in events { apply(event, group: nil) }
    }

    /// An event sent by a running effect.
    private func receive(_ event: F.Event, from group: EffectGroup) {
        // Re-checked here, on the actor: a cancel applied while this send was on its way wins.
        guard !isShutDown, !Task.isCancelled else { return }
        apply(event, group: group)
    }

    @discardableResult
    private func apply(_ event: F.Event, group: EffectGroup?) -> EffectGroup? {
        reduced += 1
        let stamp = EntryStamp(seq: reduced, epoch: 0, committedAt: UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000)))
        if subscribers.isEmpty, stateSubscribers.isEmpty {
            return instance.apply(event, stamp: stamp, group: group)
        }
        return instance.apply(event, stamp: stamp, group: group) { _, state in
            subscribers.notify(state)
            for subscriber in stateSubscribers { subscriber(state) }
        }
    }

    /// Cancels every running effect, refuses new events and finishes every state stream.
    ///
    /// Sends from effects that are still unwinding are dropped. Calling it twice is harmless.
    public func shutDown() {
        isShutDown = true
        runtime.shutDown()
        subscribers.finishAll()
    }

    /// Suspends until no effect of this store is running. Mostly for tests and orderly shutdown.
    public func waitForEffects() async {
        await runtime.waitUntilIdle()
    }

    /// The number of effect tasks currently running.
    public var runningEffectCount: Int { runtime.runningCount }

    /// A stable digest of the current state, equal across processes and runs for equal states.
    public func stateDigest() throws -> StateDigest where F.State: Encodable {
        try StateDigest(of: instance.state)
    }
}

extension FlowStore {
    /// Calls `callback` with every new state, on the store's executor, until the subscription is
    /// cancelled.
    ///
    /// The callback runs synchronously inside the store: keep it short, and never emit from it (that
    /// would wait on the store that is calling you).
    ///
    /// - Parameters:
    ///   - sendCurrent: Whether to call `callback` with the current state right away.
    ///   - callback: Receives each new state.
    /// - Returns: A subscription; cancel it (or call ``unsubscribe(_:)``) to stop the callbacks.
    public func subscribe(
        sendCurrent: Bool = true,
        _ callback: @escaping @Sendable (F.State) -> Void
    ) -> StateSubscription {
        let subscription = subscribers.add(.callback(callback))
        if sendCurrent { callback(instance.state) }
        return subscription
    }

    /// Stops the callbacks of a subscription.
    public nonisolated func unsubscribe(_ subscription: StateSubscription) {
        subscription.cancel()
    }

    /// A stream of states: the current one first, then each new one, until the store shuts down.
    ///
    /// - Parameter bufferingPolicy: What to keep when the reader falls behind. The default keeps
    ///   only the newest state, the usual choice for rendering; `.unbounded` keeps every state.
    /// - Returns: The stream. Stop iterating (or cancel the iterating task) to unsubscribe.
    public func states(
        bufferingPolicy: AsyncStream<F.State>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncStream<F.State> {
        let (stream, continuation) = AsyncStream.makeStream(of: F.State.self, bufferingPolicy: bufferingPolicy)
        guard !isShutDown else {
            continuation.finish()
            return stream
        }
        continuation.yield(instance.state)
        let subscription = subscribers.add(.stream(continuation))
        continuation.onTermination = { _ in subscription.cancel() }
        return stream
    }

    /// A stream of states that keeps only the newest when the reader falls behind.
    public var states: AsyncStream<F.State> { states() }
}

/// Holds a reference without keeping its target alive.
final class WeakBox<Value: AnyObject & Sendable>: @unchecked Sendable {
    // Written once, before any reader can see the box.
    weak var value: Value?
}

/// A store is a ``StatefulFlowProviding`` flow: `await store.subscribe { state in … }` and
/// `await store.emit(event)` work as on any actor flow.
extension FlowStore: StatefulFlowProviding where F.State: Hashable {
    /// Emits an event, as ``StatefulFlowProviding`` spells it; ``emit(_:)-(F.Event)`` does the
    /// same and returns a handle on the event's effects.
    @_disfavoredOverload
    public func emit(_ event: F.Event) async {
        let _: EmitTask = emit(event)
    }
}
