import Clocks
import FlowKit
import FlowKitTesting
import Testing

/// Debounce and throttle, on a test clock.
@Suite struct EffectTimingTests {
    struct TimingFlow: Flow {
        struct State: Equatable, Sendable { var received: [Int] = [] }
        enum Event: Equatable, Sendable {
            case debounced(Int)
            case throttled(Int, latest: Bool)
            case received(Int)
        }

        let clock: TestClock<Duration>

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .debounced(let value):
                return .send(.received(value)).debounce(id: "debounce", for: .milliseconds(300), clock: clock)
            case .throttled(let value, let latest):
                return .send(.received(value)).throttle(id: "throttle", for: .seconds(1), clock: clock, latest: latest)
            case .received(let value):
                state.received.append(value)
                return .none
            }
        }
    }

    @Test func debounceRunsOnlyAfterThePause() async {
        let clock = TestClock()
        let store = TestStore(initialState: TimingFlow.State()) { TimingFlow(clock: clock) }
        await store.send(.debounced(1))
        await clock.advance(by: .milliseconds(200))
        await store.send(.debounced(2))
        await clock.advance(by: .milliseconds(200))
        await store.send(.debounced(3))
        await clock.advance(by: .milliseconds(300))
        await store.receive(.received(3)) { $0.received = [3] }
        await store.finish()
    }

    @Test func throttleDropsWithinTheWindow() async {
        let clock = TestClock()
        let store = TestStore(initialState: TimingFlow.State()) { TimingFlow(clock: clock) }
        await store.send(.throttled(1, latest: false))
        await store.receive(.received(1)) { $0.received = [1] }
        await clock.advance(by: .milliseconds(500))
        await store.send(.throttled(2, latest: false))
        await clock.advance(by: .milliseconds(600))
        await store.send(.throttled(3, latest: false))
        await store.receive(.received(3)) { $0.received = [1, 3] }
        await store.finish()
    }

    @Test func throttleLatestRunsTheNewestAtTheEndOfTheWindow() async {
        let clock = TestClock()
        let store = TestStore(initialState: TimingFlow.State()) { TimingFlow(clock: clock) }
        await store.send(.throttled(1, latest: true))
        await store.receive(.received(1)) { $0.received = [1] }
        await clock.advance(by: .milliseconds(200))
        await store.send(.throttled(2, latest: true))
        await clock.advance(by: .milliseconds(200))
        await store.send(.throttled(3, latest: true))
        await clock.advance(by: .milliseconds(600))
        await store.receive(.received(3)) { $0.received = [1, 3] }
        await store.finish()
    }
}
