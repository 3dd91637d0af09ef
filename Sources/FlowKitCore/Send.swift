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

extension Send {
    /// Sends an event back to the flow, as TCA's `send(_:animation:)` is spelled, so that effects
    /// written for SwiftUI compile unchanged: `await send(.timerTick, animation: .default)`.
    ///
    /// A flow's state is not a view: the event is sent as by ``callAsFunction(_:)``, and the
    /// animation belongs to whatever view later shows the state. Outside SwiftUI, ``Animation`` is
    /// a stand-in that carries nothing.
    public func callAsFunction(_ event: Event, animation: Animation?) async {
        await callAsFunction(event)
    }
}

#if canImport(SwiftUI)
import SwiftUI
#else
/// Where SwiftUI does not exist (Linux, servers), the `animation:` a SwiftUI effect passes to
/// `send(_:animation:)`: accepted so the effect compiles unchanged, and ignored.
public struct Animation: Sendable, Hashable {
    private init() {}

    /// SwiftUI's default animation.
    public static let `default` = Animation()
    /// Spellings SwiftUI effects commonly pass.
    public static let linear = Animation()
    public static let easeIn = Animation()
    public static let easeOut = Animation()
    public static let easeInOut = Animation()
    public static let spring = Animation()
}
#endif
