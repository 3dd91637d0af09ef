import Clocks
import FlowKit
import FlowKitExamples
import FlowKitTesting
import Testing

/// The article Effects' "Timer Effects": a timer on the injected clock, and a countdown that completes.
@Suite struct TimerEffectsTests {
    @Test func timerTicksOnTheInjectedClockUntilToggledOff() async {
        let clock = TestClock()
        let store = TestStore(initialState: TimerFlow.State()) {
            TimerFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }

        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = true }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 1 }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 2 }
        // Toggling off starts a new effect with cancelInFlight, which cancels the ticking one.
        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = false }
        await clock.advance(by: .seconds(5))
        await store.finish()
    }

    @Test func timerStopsOnCancelID() async {
        let clock = TestClock()
        let store = TestStore(initialState: TimerFlow.State()) {
            TimerFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }

        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = true }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 1 }
        await store.send(.stop) { $0.isTimerActive = false }
        await clock.advance(by: .seconds(3))
        await store.finish()
    }

    @Test func countdownOfTheSeedsSixtySecondsCompletesAndCancelsItsTimer() async {
        let clock = TestClock()
        let store = TestStore(initialState: CountdownFlow.State()) {
            CountdownFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }

        await store.send(.startCountdown) { $0.timeRemaining = 60 }
        for remaining in (0..<60).reversed() {
            await clock.advance(by: .seconds(1))
            await store.receive(.timerTick) { $0.timeRemaining = remaining }
        }
        // `.concatenate(.cancel(id:), .send(.timerCompleted))`: the cancel runs first, then the send.
        await store.receive(.timerCompleted) { $0.isCompleted = true }
        await clock.advance(by: .seconds(10))
        await store.finish()
    }
}
