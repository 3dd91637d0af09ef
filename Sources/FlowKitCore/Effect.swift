/// Work a reducer asks for after changing state: async operations, follow-up events, cancellation.
///
/// An effect is a value that describes work; the store that received the event runs it. Build one
/// from the static constructors and compose with `merge(_:)`,
/// `concatenate(_:)` and ``cancellable(id:cancelInFlight:)``:
///
/// ```swift
/// case .searchTextChanged(let text):
///     state.searchText = text
///     return .run { [text] send in
///         try await clock.sleep(for: .milliseconds(300))
///         await send(.searchResults(try await searchClient.search(text)))
///     }
///     .cancellable(id: CancelID.search, cancelInFlight: true)
/// ```
///
/// Because an effect is a description, a cluster node can evaluate the parts every replica must see
/// (``cancel(id:)`` and `cancelInFlight`) while only the event's origin node runs the rest.
///
/// The constructors are `@inlinable`: a flow's reducer builds an effect for every event, and compiled
/// into the flow's own module, knowing its event type, they build it without looking up type
/// metadata at run time.
public struct Effect<Event: Sendable>: Sendable {
    /// The operation tree the runtime interprets.
    @usableFromInline
    package enum Operation: Sendable {
        case none
        case send(Event)
        case run(Run)
        case cancel(SmallList<CancelID>)
        indirect case cancellable(Effect<Event>, id: CancelID, cancelInFlight: Bool)
        case merge([Effect<Event>])
        case concatenate([Effect<Event>])
        /// Built by the runtime when it starts, from runtime-held state (throttle windows).
        case deferred(@Sendable (EffectContext) -> Effect<Event>)
    }

    /// One unit of async work, with what to do when it throws.
    @usableFromInline
    package struct Run: Sendable {
        @usableFromInline package var priority: TaskPriority?
        @usableFromInline package var body: @Sendable (Send<Event>) async throws -> Void
        @usableFromInline package var handler: (@Sendable (any Error, Send<Event>) async -> Void)?
        @usableFromInline package var origin: EffectFailure.Origin

        @inlinable
        package init(
            priority: TaskPriority?,
            body: @escaping @Sendable (Send<Event>) async throws -> Void,
            handler: (@Sendable (any Error, Send<Event>) async -> Void)?,
            origin: EffectFailure.Origin
        ) {
            self.priority = priority
            self.body = body
            self.handler = handler
            self.origin = origin
        }
    }

    @usableFromInline
    package let operation: Operation

    @inlinable
    package init(operation: Operation) {
        self.operation = operation
    }
}

extension Effect {
    /// An effect that does nothing.
    @inlinable
    public static var none: Self { Self(operation: .none) }

    /// An effect that feeds an event back into the flow immediately after the current one.
    ///
    /// The event is processed before any event that arrives later from outside, in the order the
    /// sends were returned.
    @inlinable
    public static func send(_ event: Event) -> Self {
        Self(operation: .send(event))
    }

    /// An effect that runs async work and may send events back.
    ///
    /// An error thrown from `operation` goes to `handler`. With no handler it is reported through
    /// the store's logger and its unhandled-error hook, never swallowed. `CancellationError` is not an
    /// error: a cancelled effect ends quietly.
    ///
    /// - Parameters:
    ///   - priority: The priority of the task that runs the work.
    ///   - operation: The work. Call `send` to feed events back.
    ///   - handler: Turns a thrown error into events, or reports it.
    ///   - fileID: Where the effect was made, for the report of an unhandled error.
    ///   - line: The line where the effect was made.
    /// - Returns: The effect.
    @inlinable
    public static func run(
        priority: TaskPriority? = nil,
        operation: @escaping @Sendable (_ send: Send<Event>) async throws -> Void,
        catch handler: (@Sendable (_ error: any Error, _ send: Send<Event>) async -> Void)? = nil,
        fileID: StaticString = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(
            operation: .run(
                Run(
                    priority: priority,
                    body: operation,
                    handler: handler,
                    origin: EffectFailure.Origin(fileID: fileID, line: line)
                )
            )
        )
    }

    /// Cancels every in-flight effect of this flow instance marked with `id`.
    ///
    /// In a cluster every node evaluates the cancel when it applies the event, so an event emitted at
    /// one node stops an effect running at another.
    @inlinable
    public static func cancel(id: some Hashable & Sendable) -> Self {
        Self(operation: .cancel(SmallList(CancelID(id))))
    }

    /// Cancels the in-flight effects marked with any of `ids`.
    public static func cancel(ids: some Sequence<some Hashable & Sendable>) -> Self {
        Self(operation: .cancel(SmallList(contentsOf: ids.lazy.map(CancelID.init))))
    }

    /// Marks this effect as cancellable with `id`.
    ///
    /// - Parameters:
    ///   - id: The identifier a later ``cancel(id:)`` names.
    ///   - cancelInFlight: When `true`, starting this effect first cancels any in-flight effect with
    ///     the same `id` (the "latest wins" pattern of search fields and restartable timers).
    /// - Returns: The cancellable effect.
    @inlinable
    public func cancellable(id: some Hashable & Sendable, cancelInFlight: Bool = false) -> Self {
        Self(operation: .cancellable(self, id: CancelID(id), cancelInFlight: cancelInFlight))
    }

    /// Runs effects concurrently. They start in the order given.
    public static func merge(_ effects: Self...) -> Self {
        .merge(effects)
    }

    /// Runs effects concurrently. They start in the order given.
    public static func merge(_ effects: some Sequence<Self>) -> Self {
        Self(operation: .merge(effects.filter { !$0.isNone })).flattened
    }

    /// Runs this effect and `other` concurrently.
    public func merge(with other: Self) -> Self {
        .merge(self, other)
    }

    /// Runs effects one after another: each starts when the one before it has finished.
    public static func concatenate(_ effects: Self...) -> Self {
        .concatenate(effects)
    }

    /// Runs effects one after another: each starts when the one before it has finished.
    public static func concatenate(_ effects: some Sequence<Self>) -> Self {
        Self(operation: .concatenate(effects.filter { !$0.isNone })).flattened
    }

    /// Runs this effect, then `other`.
    public func concatenate(with other: Self) -> Self {
        .concatenate(self, other)
    }

    /// Transforms the events this effect sends, to embed a child flow's effects in a parent.
    public func map<Parent: Sendable>(
        _ transform: @escaping @Sendable (Event) -> Parent
    ) -> Effect<Parent> {
        switch operation {
        case .none:
            return .none
        case .send(let event):
            return .send(transform(event))
        case .run(let run):
            let childBody = run.body
            let body: @Sendable (Send<Parent>) async throws -> Void = { send in
                try await childBody(Send<Event> { await send(transform($0)) })
            }
            var handler: (@Sendable (any Error, Send<Parent>) async -> Void)?
            if let childHandler = run.handler {
                handler = { error, send in await childHandler(error, Send<Event> { await send(transform($0)) }) }
            }
            let mapped = Effect<Parent>.Run(priority: run.priority, body: body, handler: handler, origin: run.origin)
            return Effect<Parent>(operation: .run(mapped))
        case .cancel(let ids):
            return Effect<Parent>(operation: .cancel(ids))
        case .cancellable(let effect, let id, let cancelInFlight):
            return Effect<Parent>(
                operation: .cancellable(effect.map(transform), id: id, cancelInFlight: cancelInFlight)
            )
        case .merge(let effects):
            return Effect<Parent>(operation: .merge(effects.map { $0.map(transform) }))
        case .concatenate(let effects):
            return Effect<Parent>(operation: .concatenate(effects.map { $0.map(transform) }))
        case .deferred(let build):
            return Effect<Parent>(operation: .deferred { context in build(context).map(transform) })
        }
    }

    /// Whether the effect does nothing at all.
    @inlinable
    public var isNone: Bool {
        if case .none = operation { return true }
        return false
    }

    /// Collapses empty and single-element compositions, so the runtime walks fewer nodes.
    private var flattened: Self {
        switch operation {
        case .merge(let effects), .concatenate(let effects):
            switch effects.count {
            case 0: return .none
            case 1: return effects[0]
            default: return self
            }
        default:
            return self
        }
    }
}

extension Effect {
    /// This effect without the `.cancellable` parts whose id `keep` refuses (and what they
    /// wrap), and, unless `unmarked`, without the async work outside any `.cancellable`;
    /// everything else as it is. A cluster resumes only the work whose id still marks work: a
    /// cancelled effect is never started again by a takeover.
    package func keepingCancellables(where keep: (CancelID) -> Bool, unmarked: Bool = true) -> Effect {
        switch operation {
        case .none, .send, .cancel:
            return self
        case .run, .deferred:
            return unmarked ? self : .none
        case .cancellable(let inner, let id, let cancelInFlight):
            guard keep(id) else { return .none }
            return Effect(operation: .cancellable(inner.keepingCancellables(where: keep), id: id, cancelInFlight: cancelInFlight))
        case .merge(let effects):
            return Effect(operation: .merge(effects.map { $0.keepingCancellables(where: keep, unmarked: unmarked) }))
        case .concatenate(let effects):
            return Effect(operation: .concatenate(effects.map { $0.keepingCancellables(where: keep, unmarked: unmarked) }))
        }
    }
}
