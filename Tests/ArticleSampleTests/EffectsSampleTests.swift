import Clocks
import FlowKit
import FlowKitTesting
import Synchronization
import Testing

/// The article "Effects" (Sources/FlowKit/FlowKit.docc/Effects.md): each sample in `EffectsSamples.swift` does what the document says it does,
/// asserted with a `TestStore` and a `TestClock`, in TCA's idioms (case key paths, `exhaustivity`,
/// `skipReceivedActions`, events carrying `Result<_, any Error>`).
@Suite struct EffectsSampleTests {
    struct Failure: Error, Equatable { var reason: String }

    // MARK: .run and .send

    @Test func runDoesAsyncWorkAndSendsItsResultBack() async {
        let store = TestStore(initialState: RunAndSendFlow.State()) {
            RunAndSendFlow()
        } withDependencies: {
            $0.apiClient.fetchData = { "payload" }
        }
        await store.send(.loadData) { $0.isLoading = true }
        await store.receive(\.didLoadData.success, "payload") {
            $0.isLoading = false
            $0.data = "payload"
        }
        await store.finish()
    }

    @Test func sendDispatchesTheNextEventSynchronously() async {
        let store = TestStore(initialState: RunAndSendFlow.State()) { RunAndSendFlow() }
        await store.send(.view(.onTapSave))
        await store.receive(\.saveData) { $0.saved = true }
        await store.finish()
    }

    // MARK: catch:

    @Test func catchTurnsAFailureIntoAnEvent() async {
        let store = TestStore(initialState: ErrorHandlingFlow.State()) {
            ErrorHandlingFlow()
        } withDependencies: {
            $0.apiClient.fetchItem = { id in throw Failure(reason: "no item \(id)") }
        }
        await store.send(.loadItem(7))
        await store.receive(\.loadFailed) { $0.failure = "Failure(reason: \"no item 7\")" }
        await store.finish()
    }

    @Test func catchSucceedsQuietlyWhenNothingFails() async {
        let store = TestStore(initialState: ErrorHandlingFlow.State()) {
            ErrorHandlingFlow()
        } withDependencies: {
            $0.apiClient.fetchItem = { id in "item \(id)" }
            $0.syncClient.sync = {}
        }
        await store.send(.loadItem(1))
        await store.receive(\.itemLoaded, "item 1") { $0.item = "item 1" }
        await store.send(.syncData)
        await store.receive(\.syncCompleted) { $0.synced = true }
        await store.finish()
    }

    @Test func catchThatReportsRaisesAnIssueAndSendsNothing() async {
        let store = TestStore(initialState: ErrorHandlingFlow.State()) {
            ErrorHandlingFlow()
        } withDependencies: {
            $0.syncClient.sync = { throw Failure(reason: "offline") }
        }
        await withKnownIssue {
            await store.send(.syncData)
            await store.finish()
        } matching: { issue in
            "\(issue)".contains("offline")
        }
        #expect(await store.state.synced == false)
    }

    // MARK: .concatenate and .merge

    @Test func concatenateRunsInOrder() async {
        let store = TestStore(initialState: CompositionFlow.State()) { CompositionFlow() }
        await store.send(.onAppear)
        await store.receive(.loadData) { $0.steps = ["loadData"] }
        await store.receive(.trackAnalytics) { $0.steps = ["loadData", "trackAnalytics"] }
        await store.finish()
    }

    @Test func mergeSendsTheDelegateEventAndDismisses() async {
        let dismissed = Mutex(false)
        let store = TestStore(initialState: CompositionFlow.State()) {
            CompositionFlow()
        } withDependencies: {
            $0.dismiss = DismissEffect { dismissed.withLock { $0 = true } }
        }
        await store.send(.onSave)
        await store.receive(.delegate(.didSave)) { $0.steps = ["didSave"] }
        await store.finish()
        #expect(dismissed.withLock { $0 })
    }

    // MARK: Cancellation

    @Test func aCancellableStreamStopsOnCancelAndAStartReplacesTheOneInFlight() async {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: String.self)
        let started = Mutex(0)
        let store = TestStore(initialState: StreamingFlow.State()) {
            StreamingFlow()
        } withDependencies: {
            $0.client.stream = {
                started.withLock { $0 += 1 }
                return stream
            }
        }
        await store.send(.startStreaming)
        continuation.yield("a")
        await store.receive(.didReceiveData("a")) { $0.received = ["a"] }
        await store.send(.stopStreaming)
        continuation.yield("b")  // after the cancel: nobody listens
        await store.finish()
        #expect(await store.state.received == ["a"])
        #expect(started.withLock { $0 } == 1)
    }

    // MARK: View lifecycle

    /// `.task { await send(.runTasks).finish() }`: the effect lives as long as the task that
    /// awaits it, and cancelling that task (SwiftUI does when the view goes) cancels the effect.
    @Test func runTasksLivesAsLongAsTheTaskThatAwaitsIt() async throws {
        let (statuses, continuation) = AsyncStream.makeStream(of: String.self)
        let store = FlowStore(initialState: LifecycleFlow.State()) {
            LifecycleFlow()
        } withDependencies: {
            $0.statusClient.stream = { statuses }
        }
        var states = await store.states(bufferingPolicy: .unbounded).makeAsyncIterator()
        #expect(await states.next()?.status == nil)
        let viewTask = Task { await store.send(.view(.runTasks)).finish() }
        continuation.yield("online")
        while let state = await states.next(), state.status != "online" {}
        #expect(await store.runningEffectCount == 1)
        viewTask.cancel()
        await viewTask.value
        #expect(await store.runningEffectCount == 0)
        continuation.yield("offline")  // nobody listens any more
        await Task.megaYield()
        #expect(await store.state.status == "online")
        await store.shutDown()
    }

    @Test func finishReturnsWhenTheEffectsEndOnTheirOwn() async {
        let store = FlowStore(initialState: LifecycleFlow.State()) {
            LifecycleFlow()
        } withDependencies: {
            $0.statusClient.stream = {
                AsyncStream { continuation in
                    continuation.yield("a")
                    continuation.yield("b")
                    continuation.finish()
                }
            }
        }
        await store.send(.view(.runTasks)).finish()
        #expect(await store.state.status == "b")
        await store.shutDown()
    }

    @Test func onAppearLoadsOnce() async {
        let store = TestStore(initialState: LifecycleFlow.State()) {
            LifecycleFlow()
        } withDependencies: {
            $0.loadInitialData = InitialDataLoader { "first page" }
        }
        await store.send(.view(.onAppear))
        await store.receive(\.dataLoaded, "first page") { $0.data = "first page" }
        await store.finish()
    }

    // MARK: Timers

    @Test func theBasicTimerTicksOnTheInjectedClockAndStopsWhenToggled() async {
        let clock = TestClock()
        let store = TestStore(initialState: BasicTimerFlow.State()) {
            BasicTimerFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = true }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 1 }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 2 }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 3 }
        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = false }
        await clock.advance(by: .seconds(5))
        await store.finish()
    }

    @Test func theAnimatedTimerSendsTheSameTicks() async {
        let clock = TestClock()
        let store = TestStore(initialState: AnimatedTimerFlow.State()) {
            AnimatedTimerFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = true }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 1 }
        await clock.advance(by: .seconds(1))
        await store.receive(.timerTick) { $0.secondsElapsed = 2 }
        await store.send(.toggleTimerButtonTapped) { $0.isTimerActive = false }
        await store.finish()
    }

    @Test func theCountdownCompletesAfterSixtyTicksAndCancelsItsTimer() async {
        let clock = TestClock()
        let store = TestStore(initialState: CountdownFlow.State()) {
            CountdownFlow()
        } withDependencies: {
            $0.continuousClock = clock
        }
        await store.send(.startCountdown) { $0.timeRemaining = 60 }
        // A second at a time: each tick is received before the clock moves on, so a loaded machine
        // cannot let the clock pass a timer that has not gone back to sleep yet.
        for remaining in (0...59).reversed() {
            await clock.advance(by: .seconds(1))
            await store.receive(.timerTick) { $0.timeRemaining = remaining }
        }
        await store.receive(.timerCompleted) { $0.completed = true }
        await clock.advance(by: .seconds(10))
        await store.finish()
    }

    // MARK: Capturing state

    @Test func theCapturedCountIsTheOneWhenTheButtonWasTapped() async {
        let asked = Mutex<[Int]>([])
        let store = TestStore(initialState: NumberFactFlow.State(count: 42)) {
            NumberFactFlow()
        } withDependencies: {
            $0.factClient.fetch = { number in
                asked.withLock { $0.append(number) }
                return "\(number) is the answer"
            }
        }
        await store.send(.numberFactButtonTapped) { $0.isLoading = true }
        await store.receive(\.numberFactResponse.success) {
            $0.isLoading = false
            $0.fact = "42 is the answer"
        }
        await store.finish()
        #expect(asked.withLock { $0 } == [42])
    }

    /// The sample sleeps 300 ms with `Task.sleep`, not on an injected clock, so this test takes
    /// that long. The first search's client call waits until it is cancelled, so however late the
    /// second search comes (a loaded machine can take more than 300 ms), it replaces the first in
    /// flight, and only its results, with the values it captured, reach the state.
    @Test func theLatestSearchWinsWithTheValuesItCaptured() async {
        let queries = Mutex<[String]>([])
        let (never, _) = AsyncStream.makeStream(of: Never.self)
        let store = TestStore(initialState: SearchFlow.State(filter: "new", sortOrder: "date")) {
            SearchFlow()
        } withDependencies: {
            $0.searchClient.search = { text, filter, sortOrder in
                queries.withLock { $0.append("\(text) \(filter) \(sortOrder)") }
                if text == "d" {
                    for await _ in never {}  // ends when the search is cancelled
                }
                return ["\(text) result"]
            }
        }
        await store.setTimeout(.seconds(5))
        await store.send(.searchTextChanged("d")) { $0.searchText = "d" }
        await store.send(.searchTextChanged("du")) { $0.searchText = "du" }
        await store.receive(.searchResults(["du result"])) { $0.results = ["du result"] }
        await store.finish()
        #expect(queries.withLock { $0 }.last == "du new date")
    }

    @Test func theCapturedModeDecidesWhereDataComesFrom() async {
        let online = TestStore(initialState: OfflineFlow.State(isOfflineMode: false)) {
            OfflineFlow()
        } withDependencies: {
            $0.apiClient.fetchData = { "fresh" }
        }
        await online.send(.loadData)
        await online.receive(.dataLoaded("fresh")) { $0.data = "fresh" }
        await online.finish()

        let offline = TestStore(initialState: OfflineFlow.State(isOfflineMode: true)) {
            OfflineFlow()
        } withDependencies: {
            $0.cacheClient.loadFromCache = { "cached" }
        }
        await offline.send(.loadData)
        await offline.receive(.dataLoaded("cached")) { $0.data = "cached" }
        await offline.finish()
    }
}
