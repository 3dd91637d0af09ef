import FlowKit
import FlowKitTesting
import Testing

/// TCA's idioms on the test store: events that are not `Equatable`, received by case key path;
/// `exhaustivity` set as a property; `skipReceivedActions`.
@Suite struct TestStoreCasePathTests {
    struct Fetch: Flow {
        struct State: Equatable, Sendable {
            var value: Int?
            var steps = 0
        }

        @CasePathable
        enum Event: Sendable {
            case fetch(Int)
            case response(Result<Int, any Error>)
            case step
            case done
        }

        struct Refused: Error {}

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .fetch(let number):
                return .run { send in
                    await send(.step)
                    await send(.step)
                    await send(.response(number < 0 ? .failure(Refused()) : .success(number * 2)))
                    await send(.done)
                }
            case .response(.success(let value)):
                state.value = value
                return .none
            case .response(.failure):
                state.value = nil
                return .none
            case .step:
                state.steps += 1
                return .none
            case .done:
                return .none
            }
        }
    }

    @Test func receivesByCasePathAndByCasePathWithAValue() async {
        let store = TestStore(initialState: Fetch.State()) { Fetch() }
        await store.send(.fetch(3))
        await store.receive(\.step) { $0.steps = 1 }
        await store.receive(\.step) { $0.steps = 2 }
        await store.receive(\.response.success, 6) { $0.value = 6 }
        await store.receive(\.done)
        await store.finish()
    }

    @Test func aDifferentCaseFailsWithWhatArrived() async {
        let store = TestStore(initialState: Fetch.State()) { Fetch() }
        await store.send(.fetch(-1))
        await store.receive(\.step) { $0.steps = 1 }
        await store.receive(\.step) { $0.steps = 2 }
        await withKnownIssue {
            await store.receive(\.response.success)
        } matching: { issue in
            issue.description.contains("Expected: an event matching") && issue.description.contains("failure")
        }
        await store.receive(\.done)
        await store.finish()
    }

    @Test func aDifferentValueFails() async {
        let store = TestStore(initialState: Fetch.State()) { Fetch() }
        store.exhaustivity = .off
        await store.send(.fetch(3))
        await withKnownIssue {
            await store.receive(\.response.success, 7, timeout: .milliseconds(200))
        } matching: { issue in
            issue.description.contains("with 7")
        }
    }

    @Test func withExhaustivityOffUnassertedEventsAreSkipped() async {
        let store = TestStore(initialState: Fetch.State()) { Fetch() }
        store.exhaustivity = .off
        #expect(store.exhaustivity == .off)
        await store.send(.fetch(5))
        await store.receive(\.response.success) { $0.value = 10 }
        await store.finish()
    }

    @Test func skipReceivedActionsDropsWhatArrivedAndComplainsWhenNothingDid() async {
        let store = TestStore(initialState: Fetch.State()) { Fetch() }
        let fetching = await store.send(.fetch(1))
        await fetching.finish()
        await store.skipReceivedActions()
        #expect(await store.state == Fetch.State(value: 2, steps: 2))
        await withKnownIssue {
            await store.skipReceivedActions()
        } matching: { issue in
            issue.description.contains("no received actions to skip")
        }
        await store.skipReceivedActions(strict: false)
        await store.finish()
    }
}
