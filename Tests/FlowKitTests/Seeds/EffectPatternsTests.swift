import ConcurrencyExtras
import Dependencies
import FlowKit
import FlowKitTesting
import Synchronization
import Testing

/// Every pattern of the seed "Effects" that applies outside SwiftUI.
@Suite struct EffectPatternsTests {
    typealias State = SeedEffectsFlow.State

    private func makeStore(
        state: State = State(),
        _ configure: @escaping @Sendable (inout SeedClients) -> Void = { _ in }
    ) -> TestStore<SeedEffectsFlow> {
        TestStore(initialState: state) {
            SeedEffectsFlow()
        } withDependencies: {
            var clients = SeedClients()
            configure(&clients)
            $0[SeedClients.self] = clients
        }
    }

    @Test func runDoesAsyncWorkAndSendsItsResult() async {
        let store = makeStore { $0.fetchData = { "fresh" } }
        await store.send(.loadData) { $0.isLoading = true }
        await store.receive(.didLoadData(.success("fresh"))) {
            $0.isLoading = false
            $0.data = "fresh"
        }
        await store.finish()
    }

    @Test func sendDispatchesSynchronously() async {
        let store = makeStore()
        await store.send(.view(.onTapSave))
        // `.send` is applied before `send(_:)` returns: the event is already waiting to be asserted.
        await store.receive(.saveData) { $0.saved = true }
        await store.finish()
    }

    @Test func catchTurnsAnErrorIntoAnEvent() async {
        let store = makeStore { $0.fetchItem = { _ in throw SeedEffectsFlow.ClientError(message: "not found") } }
        await store.send(.loadItem(7))
        await store.receive(.loadFailed(.init(message: "not found"))) { $0.errorMessage = "not found" }
        await store.finish()
    }

    @Test func catchCanReportWithoutSurfacingAnything() async {
        let reported = Mutex<[String]>([])
        let store = makeStore {
            $0.sync = { throw SeedEffectsFlow.ClientError(message: "server busy") }
            $0.reportIssue = { error in reported.withLock { $0.append("\(error)") } }
        }
        await store.send(.syncData)
        await store.finish()
        #expect(reported.withLock { $0 } == [#"ClientError(message: "server busy")"#])
    }

    @Test func concatenateRunsInOrder() async {
        let store = makeStore()
        await store.send(.onAppear)
        await store.receive(.loadData) { $0.isLoading = true }
        await store.receive(.trackAnalytics) { $0.analyticsTracked = true }
        await store.receive(.didLoadData(.success("data"))) {
            $0.isLoading = false
            $0.data = "data"
        }
        await store.finish()
    }

    @Test func mergeRunsConcurrently() async {
        let dismissed = Mutex(false)
        let store = makeStore { $0.dismiss = { dismissed.withLock { $0 = true } } }
        await store.send(.onSave)
        await store.receive(.delegate(.didSave)) { $0.saved = true }
        await store.finish()
        #expect(dismissed.withLock { $0 })
    }

    @Test func runCapturesStateForAsyncWork() async {
        let asked = Mutex<[Int]>([])
        let store = makeStore(state: State(count: 42)) {
            $0.fetchFact = { number in
                asked.withLock { $0.append(number) }
                return "\(number) is the answer"
            }
        }
        await store.send(.numberFactButtonTapped) { $0.isLoading = true }
        await store.receive(.numberFactResponse(.success("42 is the answer"))) {
            $0.isLoading = false
            $0.numberFact = "42 is the answer"
        }
        await store.finish()
        #expect(asked.withLock { $0 } == [42])
    }

    @Test(arguments: [true, false])
    func runCapturesStateForConditionals(offline: Bool) async {
        let store = makeStore(state: State(isOfflineMode: offline)) {
            $0.fetchData = { "network" }
            $0.loadFromCache = { "cache" }
        }
        await store.send(.loadDataRespectingOfflineMode)
        let expected = offline ? "cache" : "network"
        await store.receive(.dataLoaded(expected)) { $0.data = expected }
        await store.finish()
    }

    @Test func runTasksLivesAsLongAsTheTaskThatFinishesIt() async throws {
        let (statuses, continuation) = AsyncStream.makeStream(of: String.self)
        let store = FlowStore(initialState: State()) {
            SeedEffectsFlow()
        } withDependencies: {
            $0[SeedClients.self] = SeedClients(statusStream: { statuses })
        }
        let states = await store.states(bufferingPolicy: .unbounded)

        // The view's `.task { await send(.runTasks).finish() }`.
        let viewTask = Task { await store.emit(.view(.runTasks)).finish() }
        continuation.yield("online")
        var iterator = states.makeAsyncIterator()
        while let state = await iterator.next(), state.status != "online" {}
        #expect(await store.runningEffectCount == 1)

        // The view disappears: cancelling the task cancels the stream effect.
        viewTask.cancel()
        await viewTask.value
        await store.waitForEffects()
        #expect(await store.runningEffectCount == 0)
        continuation.yield("offline")
        await Task.megaYield()
        #expect(await store.state.status == "online")
    }

    @Test func finishReturnsWhenTheEffectsEndOnTheirOwn() async {
        let store = FlowStore(initialState: State()) {
            SeedEffectsFlow()
        } withDependencies: {
            $0[SeedClients.self] = SeedClients(statusStream: { AsyncStream { continuation in
                continuation.yield("a")
                continuation.yield("b")
                continuation.finish()
            } })
        }
        await store.emit(.view(.runTasks)).finish()
        #expect(await store.state.status == "b")
    }
}
