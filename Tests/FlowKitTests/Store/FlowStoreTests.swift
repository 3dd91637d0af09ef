import Clocks
import ConcurrencyExtras
import Dependencies
import FlowKit
import FlowKitExamples
import Logging
import Synchronization
import Testing

/// The store's contract: serial events, state streams and subscriptions, errors, shutdown.
@Suite struct FlowStoreTests {
    @Test func aThousandConcurrentEmitsAreAllAppliedExactlyOnce() async {
        let store = FlowStore(initialState: CounterFlow.State(), flow: CounterFlow())
        let seen = Mutex<[Int]>([])
        let subscription = await store.subscribe(sendCurrent: false) { state in seen.withLock { $0.append(state.count) } }

        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    for _ in 0..<20 { await store.emit(.increment) }
                }
            }
        }

        #expect(await store.state.count == 1000)
        // One state per event, each exactly one more than the last: no event was lost or applied
        // twice, and no two reducers interleaved.
        #expect(seen.withLock { $0 } == Array(1...1000))
        subscription.cancel()
        await store.emit(.increment)
        #expect(seen.withLock { $0.count } == 1000)
    }

    @Test func sendsAreAppliedRightAfterTheEventThatReturnedThem() async {
        let store = FlowStore(initialState: ProbeFlow.State()) { ProbeFlow() }
        let states = await store.states(bufferingPolicy: .unbounded)
        await store.emit(.chain(3))
        await store.emit(.increment)
        await store.shutDown()
        var counts: [Int] = []
        for await state in states { counts.append(state.count) }
        #expect(counts == [0, 1, 2, 3, 4, 5])
    }

    @Test func subscribeSendsTheCurrentStateAndStopsWhenUnsubscribed() async {
        let store = FlowStore(initialState: CounterFlow.State(count: 5), flow: CounterFlow())
        let seen = Mutex<[Int]>([])
        let subscription = await store.subscribe { state in seen.withLock { $0.append(state.count) } }
        await store.emit(.increment)
        store.unsubscribe(subscription)
        await store.emit(.increment)
        #expect(seen.withLock { $0 } == [5, 6])
    }

    @Test func latestStateStreamKeepsOnlyTheNewest() async {
        let store = FlowStore(initialState: CounterFlow.State(), flow: CounterFlow())
        let states = await store.states
        await store.emit(contentsOf: Array(repeating: .increment, count: 100))
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next()?.count == 100)
    }

    @Test func anUnhandledEffectErrorIsReportedAndCancellationIsNot() async {
        let failures = Mutex<[String]>([])
        let store = FlowStore(
            initialState: ProbeFlow.State(),
            logger: Logger(label: "test"),
            onUnhandledEffectError: { failure in failures.withLock { $0.append("\(failure.error)") } },
            flow: { ProbeFlow() }
        )
        await store.emit(.failWithCancellation).finish()
        await store.emit(.fail("disk full")).finish()
        #expect(failures.withLock { $0 } == [#"Failure(message: "disk full")"#])
    }

    @Test func shutdownCancelsRunningEffectsAndDropsTheirSends() async throws {
        let clock = TestClock()
        let probe = Probe()
        let store = FlowStore(initialState: ProbeFlow.State()) {
            ProbeFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0[Probe.self] = probe
        }
        let states = await store.states(bufferingPolicy: .unbounded)
        await store.emit(.start(name: "a", id: "a", cancelInFlight: false))
        await store.emit(.start(name: "b", id: "b", cancelInFlight: false))
        #expect(await store.runningEffectCount == 2)

        await store.shutDown()
        await store.waitForEffects()
        await clock.advance(by: .seconds(2))
        #expect(await store.runningEffectCount == 0)
        #expect(await store.state.finished == [])
        #expect(Set(probe.recorded.filter { $0.hasSuffix("cancelled") }) == ["a cancelled", "b cancelled"])
        // The stream ended with the store: the initial state and one per event, then nothing.
        var count = 0
        for await _ in states { count += 1 }
        #expect(count == 3)
        // Events after shutdown are ignored.
        await store.emit(.increment)
        #expect(await store.state.count == 0)
    }

    @Test func releasingTheStoreEndsItsEffects() async throws {
        let clock = TestClock()
        let probe = Probe()
        var store: FlowStore<ProbeFlow>? = FlowStore(initialState: ProbeFlow.State()) {
            ProbeFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0[Probe.self] = probe
        }
        await store!.emit(.start(name: "orphan", id: "x", cancelInFlight: false))
        await Task.megaYield()
        store = nil
        for _ in 0..<100 where !probe.recorded.contains("orphan cancelled") {
            await Task.megaYield()
        }
        #expect(probe.recorded.contains("orphan cancelled"))
    }

    @Test func stateDigestIsStableForEqualStates() async throws {
        let one = FlowStore(initialState: KeyValueFlow.State(), flow: KeyValueFlow())
        let two = FlowStore(initialState: KeyValueFlow.State(), flow: KeyValueFlow())
        for index in 0..<50 { await one.emit(.set(key: "k\(index)", value: "\(index)")) }
        for index in (0..<50).reversed() { await two.emit(.set(key: "k\(index)", value: "\(index)")) }
        #expect(try await one.stateDigest() == two.stateDigest())
        await two.emit(.remove(key: "k3"))
        #expect(try await one.stateDigest() != two.stateDigest())
    }

    /// Effect tasks bind the store's dependencies themselves: a `@Dependency` resolved inside the
    /// work, not captured from the flow, sees them too, in merged and concatenated parts as well.
    @Test func effectsResolveTheStoresDependenciesInsideTheirWork() async {
        let probe = Probe()
        let store = FlowStore(initialState: DependencyResolvingFlow.State()) {
            DependencyResolvingFlow()
        } withDependencies: {
            $0[Probe.self] = probe
        }
        await store.emit(.direct).finish()
        await store.emit(.merged).finish()
        await store.emit(.concatenated).finish()
        #expect(probe.recorded.sorted() == ["direct", "first", "merged a", "merged b", "second"])
    }
}

/// Resolves its dependency where the work runs (the default `Probe` is a fresh one per read, so a
/// missing binding records nowhere the test can see).
private struct DependencyResolvingFlow: Flow {
    struct State: Sendable {}
    enum Event: Sendable { case direct, merged, concatenated }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .direct:
            return .run { _ in record("direct") }
        case .merged:
            return .merge(.run { _ in record("merged a") }, .run { _ in record("merged b") })
        case .concatenated:
            return .concatenate(
                .run { _ in record("first") },
                .run { _ in record("second") }.cancellable(id: "second")
            )
        }
    }

    private static func record(_ name: String) {
        @Dependency(Probe.self) var probe
        probe.record(name)
    }

    private func record(_ name: String) { Self.record(name) }
}
