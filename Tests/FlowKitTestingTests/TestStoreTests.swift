import Clocks
import FlowKit
import FlowKitTesting
import Testing

/// The test store must catch every kind of mistake a test can make, with a message that helps.
@Suite struct TestStoreTests {
    struct Feature: Flow {
        struct State: Equatable, Sendable {
            var count = 0
            var label = ""
        }

        enum Event: Equatable, Sendable {
            case increment
            case incrementTwiceLater
            case relabel(String)
            case tickForever
            case noop
            case failing
        }

        struct Boom: Error {}

        let clock: TestClock<Duration>

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .increment:
                state.count += 1
                return .none
            case .incrementTwiceLater:
                return .run { send in
                    await send(.increment)
                    await send(.increment)
                }
            case .relabel(let label):
                state.label = label
                return .none
            case .tickForever:
                return .run { send in
                    for await _ in clock.timer(interval: .seconds(1)) { await send(.noop) }
                }
            case .noop:
                return .none
            case .failing:
                return .run { _ in throw Boom() }
            }
        }
    }

    private func makeStore() -> (TestStore<Feature>, TestClock<Duration>) {
        let clock = TestClock()
        let store = TestStore(initialState: Feature.State()) { Feature(clock: clock) }
        return (store, clock)
    }

    @Test func passesWhenEverythingIsAsserted() async {
        let (store, _) = makeStore()
        await store.send(.increment) { $0.count = 1 }
        await store.send(.incrementTwiceLater)
        await store.receive(.increment) { $0.count = 2 }
        await store.receive(.increment) { $0.count = 3 }
        await store.finish()
    }

    @Test func failsOnAStateChangeThatDoesNotMatch() async {
        let (store, _) = makeStore()
        await withKnownIssue {
            await store.send(.increment) { $0.count = 2 }
        } matching: { issue in
            issue.description.contains("does not match the expectation") && issue.description.contains("count")
        }
    }

    @Test func failsOnAnUnassertedStateChange() async {
        let (store, _) = makeStore()
        await withKnownIssue {
            await store.send(.relabel("x"))
        } matching: { issue in
            issue.description.contains("no change was expected")
        }
    }

    @Test func failsWhenAnAssertionExpectsAChangeThatDidNotHappen() async {
        let (store, _) = makeStore()
        await withKnownIssue {
            await store.send(.noop) { $0.count = 0 }
        } matching: { issue in
            issue.description.contains("Expected the state to change")
        }
    }

    @Test func failsOnAnUnreceivedEventBeforeTheNextSend() async {
        let (store, _) = makeStore()
        await store.send(.incrementTwiceLater)
        await store.receive(.increment) { $0.count = 1 }
        await withKnownIssue {
            await store.send(.noop)
        } matching: { issue in
            issue.description.contains("Must handle 1 received event(s)")
        }
        await store.finish()
    }

    @Test func failsOnAnUnexpectedEvent() async {
        let (store, _) = makeStore()
        await store.send(.incrementTwiceLater)
        await withKnownIssue {
            await store.receive(.noop)
        } matching: { issue in
            issue.description.contains("Received an unexpected event")
        }
        await store.skipReceivedEvents()
        await store.finish()
    }

    @Test func failsWhenNothingIsReceivedInTime() async {
        let (store, _) = makeStore()
        await store.setTimeout(.milliseconds(50))
        await withKnownIssue {
            await store.receive(.increment)
        } matching: { issue in
            issue.description.contains("received none within")
        }
    }

    @Test func failsOnAnEffectStillRunningAtFinish() async {
        let (store, clock) = makeStore()
        await store.send(.tickForever)
        await clock.advance(by: .seconds(1))
        await store.receive(.noop)
        await withKnownIssue {
            await store.finish(timeout: .milliseconds(50))
        } matching: { issue in
            issue.description.contains("still running")
        }
    }

    @Test func failsOnAnEventLeftUnreceivedAtFinish() async {
        let (store, _) = makeStore()
        await store.send(.incrementTwiceLater)
        await withKnownIssue {
            await store.finish()
        } matching: { issue in
            issue.description.contains("2 event(s) that were not asserted")
        }
    }

    @Test func failsOnAnEffectErrorWithoutCatch() async {
        let (store, _) = makeStore()
        await store.send(.failing)
        await withKnownIssue {
            await store.finish()
        } matching: { issue in
            issue.description.contains("threw Boom()") && issue.description.contains("no catch: handler")
        }
    }

    @Test func nonExhaustiveStoreChecksOnlyWhatItIsTold() async {
        let (store, clock) = makeStore()
        await store.setExhaustivity(.off)
        await store.send(.relabel("unchecked"))
        await store.send(.incrementTwiceLater)
        // The first matching event is asserted; the second is skipped at the next send.
        await store.receive(.increment) { $0.count = 1 }
        await store.send(.tickForever)
        await clock.advance(by: .seconds(3))
        await store.finish()
        #expect(await store.state == Feature.State(count: 2, label: "unchecked"))
    }

    @Test func aTaskHandleCancelsItsEffects() async {
        let (store, clock) = makeStore()
        let task = await store.send(.tickForever)
        await clock.advance(by: .seconds(1))
        await store.receive(.noop)
        await task.cancel()
        #expect(task.isFinished)
        await store.finish()
    }
}
