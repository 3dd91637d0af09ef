import FlowKitCore

/// The FlowStore's effect start + cancel in a plain loop, for profilers (`perf record`) that the
/// benchmark harness gets in the way of, and for comparing allocators:
///
///     swift run -c release flow-perf [rounds] [floor rounds]   # floor rounds 0: the store alone
///     LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 .build/release/flow-perf
///
/// Each round emits an event that starts a cancellable `.run` effect and one that cancels it, the
/// work of FlowStoreBenchmarks' "effect start + cancel". The same run measures its floor: an actor
/// that starts and cancels the same task with none of FlowKit's bookkeeping.
@main
struct FlowPerf {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let rounds = arguments.first ?? 1_000_000
        // A second number sets the floor's rounds apart, e.g. 0 to profile the store alone.
        let floorRounds = arguments.dropFirst().first ?? rounds
        let store = FlowStore(initialState: LongFlow.State(), flow: LongFlow())
        // Off the main actor, as the benchmark harness runs: a hop back to the main thread after
        // every emit would cost two thread switches.
        let elapsed = await Task.detached {
            let start = ContinuousClock.now
            for _ in 0..<rounds {
                await store.emit(.start)
                await store.emit(.stop)
            }
            return start.duration(to: .now)
        }.value
        let unwinding = ContinuousClock.now
        await store.waitForEffects()
        report("FlowStore effect start + cancel", rounds: rounds, elapsed: elapsed)
        print("  then waited \(unwinding.duration(to: .now)) for the cancelled effects to end")

        let owner = TaskOwner()
        let floorElapsed = await Task.detached {
            let start = ContinuousClock.now
            for _ in 0..<floorRounds {
                await owner.start()
                await owner.stop()
            }
            return start.duration(to: .now)
        }.value
        report("actor start + cancel (floor)", rounds: floorRounds, elapsed: floorElapsed)
    }

    static func report(_ name: String, rounds: Int, elapsed: Duration) {
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let microseconds = seconds / Double(rounds) * 1e6
        print("\(name): \(rounds) rounds in \(seconds) s = \(Int(Double(rounds) / seconds)) /s ( \(microseconds) µs each)")
    }
}

/// Starts a task that sleeps for an hour on one call and cancels it on the next.
actor TaskOwner {
    private var task: Task<Void, Never>?

    func start() {
        task = Task { _ = try? await Task.sleep(for: .seconds(3600)) }
    }

    func stop() {
        task?.cancel()
        task = nil
    }
}

struct LongFlow: Flow {
    struct State: Sendable {}
    enum Event: Sendable {
        case start
        case stop
    }

    enum CancelID { case long }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .start:
            return .run { _ in try await Task.sleep(for: .seconds(3600)) }
                .cancellable(id: CancelID.long)
        case .stop:
            return .cancel(id: CancelID.long)
        }
    }
}
