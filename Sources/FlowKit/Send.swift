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
    let deliver: @Sendable (Event) async -> Void

    /// Creates a `Send` that hands every event to `deliver`. Mostly useful for testing effects in
    /// isolation.
    public init(_ deliver: @escaping @Sendable (Event) async -> Void) {
        self.deliver = deliver
    }

    /// Sends an event back to the flow, unless the calling effect has been cancelled.
    public func callAsFunction(_ event: Event) async {
        guard !Task.isCancelled else { return }
        await deliver(event)
    }
}
