import Clocks
import Dependencies
import FlowKitCore

/// The countdown of the article Effects (FlowKit.docc): a timer with a duration that cancels itself and reports completion.
public struct CountdownFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        public var timeRemaining: Int
        public var isCompleted: Bool

        public init(timeRemaining: Int = 0, isCompleted: Bool = false) {
            self.timeRemaining = timeRemaining
            self.isCompleted = isCompleted
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case startCountdown
        case timerTick
        case timerCompleted
    }

    enum CancelID { case timer }

    /// The countdown's length, in seconds; the article uses 60.
    public var duration: Int
    @Dependency(\.continuousClock) var clock

    public init(duration: Int) {
        self.duration = duration
    }

    /// The article's sixty-second countdown.
    public init() {
        self.init(duration: 60)
    }

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .startCountdown:
            state.timeRemaining = duration
            state.isCompleted = false
            return .run { send in
                for await _ in self.clock.timer(interval: .seconds(1)) {
                    await send(.timerTick)
                }
            }
            .cancellable(id: CancelID.timer)

        case .timerTick:
            state.timeRemaining -= 1
            if state.timeRemaining <= 0 {
                return .concatenate(
                    .cancel(id: CancelID.timer),
                    .send(.timerCompleted)
                )
            }
            return .none

        case .timerCompleted:
            state.isCompleted = true
            return .none
        }
    }
}

extension CountdownFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.startCountdown, .timerTick, .timerCompleted] }

    /// A countdown whose node died counts down the rest at a survivor, from where its state is.
    public static func resume(_ state: State) -> Effect<Event> {
        guard state.timeRemaining > 0, !state.isCompleted else { return .none }
        return .run { send in
            @Dependency(\.continuousClock) var clock
            for await _ in clock.timer(interval: .seconds(1)) {
                await send(.timerTick)
            }
        }
        .cancellable(id: CancelID.timer)
    }
}
