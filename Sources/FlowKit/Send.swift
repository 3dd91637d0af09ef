/// The function an effect uses to feed events back into its flow.
///
/// `send` is awaitable: it returns once the event has been processed (locally) or handed to the
/// order (in a cluster). A send from a cancelled effect is dropped, so an effect that outlives its
/// cancellation can never change state.
///
/// ```swift
/// return .run { send in
///     let data = try await apiClient.fetchData()
///     await send(.didLoadData(.success(data)))
/// }
/// ```
public struct Send<Event: Sendable>: Sendable {
    private enum Target: Sendable {
        case function(@Sendable (Event) async -> Void)
        /// The runtime's delivery with the effect's group: no closure to allocate per effect.
        case runtime(EffectRuntime<Event>.Deliver, EffectGroup)
    }

    private let target: Target

    /// Creates a `Send` that hands every event to `deliver`. Mostly useful for testing effects in
    /// isolation.
    public init(_ deliver: @escaping @Sendable (Event) async -> Void) {
        target = .function(deliver)
    }

    init(deliver: @escaping EffectRuntime<Event>.Deliver, group: EffectGroup) {
        target = .runtime(deliver, group)
    }

    /// Sends an event back to the flow, unless the calling effect has been cancelled.
    public func callAsFunction(_ event: Event) async {
        guard !Task.isCancelled else { return }
        switch target {
        case .function(let deliver): await deliver(event)
        case .runtime(let deliver, let group): await deliver(event, group)
        }
    }
}
