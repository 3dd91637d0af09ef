import FlowKit

/// The articles' timer: ticks on an injected clock until toggled off.
struct TimerFlow: Flow {
    struct State: Equatable, Sendable {
        var isTimerActive = false
        var secondsElapsed = 0
    }

    @CasePathable
    enum Event: Equatable, Sendable {
        case toggleTimerButtonTapped
        case timerTick
    }

    enum CancelID { case timer }

    @Dependency(\.continuousClock) var clock

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .toggleTimerButtonTapped:
            state.isTimerActive.toggle()
            return .run { [isTimerActive = state.isTimerActive] send in
                guard isTimerActive else { return }
                for await _ in self.clock.timer(interval: .milliseconds(10)) {
                    await send(.timerTick)
                }
            }
            .cancellable(id: CancelID.timer, cancelInFlight: true)
        case .timerTick:
            state.secondsElapsed += 1
            return .none
        }
    }
}

let store = FlowStore(initialState: TimerFlow.State()) { TimerFlow() }
await store.emit(.toggleTimerButtonTapped)
for await state in await store.states where state.secondsElapsed >= 3 {
    await store.emit(.toggleTimerButtonTapped)
    print("flow-app: ticked \(state.secondsElapsed) times; a tick is .timerTick: \(TimerFlow.Event.timerTick.is(\.timerTick))")
    break
}
