import Clocks
import ConcurrencyExtras
import Dependencies
import FlowKit
import Testing

/// The races that bit TCA users, each with a defined outcome.
@Suite struct CancellationRaceTests {
    private func makeStore() -> (FlowStore<ProbeFlow>, TestClock<Duration>, Probe) {
        let clock = TestClock()
        let probe = Probe()
        let store = FlowStore(initialState: ProbeFlow.State()) {
            ProbeFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0[Probe.self] = probe
        }
        return (store, clock, probe)
    }

    /// `.merge(.cancellable(id:), .cancel(id:))` in one return: effects are walked in order, so the
    /// cancel stops the effect just registered, and it never sends.
    @Test func cancellableThenCancelOfTheSameIDInOneReturn() async {
        let (store, clock, _) = makeStore()
        await store.emit(.startThenCancel(name: "a", id: "x")).finish()
        await clock.advance(by: .seconds(2))
        #expect(await store.state.finished == [])
        #expect(await store.runningEffectCount == 0)
    }

    /// The reverse order: the cancel finds nothing, then the effect starts and runs to completion.
    @Test func cancelThenCancellableOfTheSameIDInOneReturn() async {
        let (store, clock, _) = makeStore()
        let task = await store.emit(.cancelThenStart(name: "b", id: "x"))
        await clock.advance(until: { await store.state.finished == ["b"] })
        await task.finish()
        #expect(await store.state.finished == ["b"])
    }

    @Test func cancelInFlightReplacesTheRunningEffect() async {
        let (store, clock, probe) = makeStore()
        await store.emit(.start(name: "first", id: "search", cancelInFlight: true))
        await clock.advance(by: .milliseconds(500))
        let second = await store.emit(.start(name: "second", id: "search", cancelInFlight: true))
        await clock.advance(until: { await !store.state.finished.isEmpty })
        await second.finish()
        await store.waitForEffects()
        #expect(await store.state.finished == ["second"])
        #expect(probe.recorded.contains("first cancelled"))
    }

    /// An effect is registered under its cancel id before `emit` returns, so a cancel applied next
    /// always finds it, whether or not its task has begun to run. Repeated to give the scheduler
    /// every chance to start a task early.
    @Test func aCancelArrivingBeforeItsEffectStartedStillCancelsIt() async {
        let (store, clock, probe) = makeStore()
        for round in 0..<500 {
            await store.emit(contentsOf: [
                .start(name: "r\(round)", id: "r\(round)", cancelInFlight: false),
                .stop(id: "r\(round)"),
            ])
        }
        await store.waitForEffects()
        await clock.advance(by: .seconds(5))
        #expect(await store.state.finished == [])
        #expect(await store.runningEffectCount == 0)
        // Some bodies may have started before the cancel landed; none ran to the end.
        #expect(!probe.recorded.contains { $0.hasSuffix("finished") })
    }

    @Test func cancellingAnEmitTaskCancelsItsEffectsOnly() async {
        let (store, clock, _) = makeStore()
        let a = await store.emit(.start(name: "a", id: "a", cancelInFlight: false))
        let b = await store.emit(.start(name: "b", id: "b", cancelInFlight: false))
        a.cancel()
        await a.finish()
        #expect(a.isCancelled)
        await clock.advance(until: { await !store.state.finished.isEmpty })
        await b.finish()
        #expect(await store.state.finished == ["b"])
    }
}

extension TestClock<Duration> {
    /// Advances in small steps until `condition` holds (at most a simulated minute).
    ///
    /// An effect task may not have reached its sleep when a test first advances the clock; stepping
    /// until the outcome is observed makes the test independent of when the task got scheduled.
    func advance(until condition: () async -> Bool) async {
        for _ in 0..<600 {
            if await condition() { return }
            await advance(by: .milliseconds(100))
        }
        Issue.record("the condition did not hold after a simulated minute")
    }
}
