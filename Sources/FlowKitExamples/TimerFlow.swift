import Clocks
import Dependencies
import FlowKitCore

/// The basic timer of the article Effects (FlowKit.docc): a toggle starts and stops a one-second timer on the injected clock.
///
/// Toggling off cancels through `cancelInFlight`, and ``Event/stop`` cancels with
/// ``Effect/cancel(id:)``; in a cluster either one, emitted at any node, stops the timer running on
/// the node where it started.
public struct TimerFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        public var isTimerActive: Bool
        public var secondsElapsed: Int

        public init(isTimerActive: Bool = false, secondsElapsed: Int = 0) {
            self.isTimerActive = isTimerActive
            self.secondsElapsed = secondsElapsed
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case toggleTimerButtonTapped
        case timerTick
        case stop
    }

    enum CancelID { case timer }

    @Dependency(\.continuousClock) var clock

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .toggleTimerButtonTapped:
            state.isTimerActive.toggle()
            return .run { [isTimerActive = state.isTimerActive] send in
                guard isTimerActive else { return }
                for await _ in self.clock.timer(interval: .seconds(1)) {
                    await send(.timerTick)
                }
            }
            .cancellable(id: CancelID.timer, cancelInFlight: true)

        case .timerTick:
            state.secondsElapsed += 1
            return .none

        case .stop:
            state.isTimerActive = false
            return .cancel(id: CancelID.timer)
        }
    }
}

extension TimerFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.toggleTimerButtonTapped, .stop, .timerTick] }

    /// A timer whose node died ticks on at a survivor: the state says whether it runs.
    public static func resume(_ state: State) -> Effect<Event> {
        guard state.isTimerActive else { return .none }
        return .run { send in
            @Dependency(\.continuousClock) var clock
            for await _ in clock.timer(interval: .seconds(1)) {
                await send(.timerTick)
            }
        }
        .cancellable(id: CancelID.timer, cancelInFlight: true)
    }
}
