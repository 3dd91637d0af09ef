import Benchmark
import FlowKitCore

/// The local store's hot paths: emits with no effect, `.send` chains, and effect start + cancel.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        // Checked against Thresholds/ by `swift package benchmark thresholds check`: time may
        // wander on this noisy machine (relaxed), allocations may not (strict, the default).
        thresholds: [.wallClock: .relaxed, .throughput: .relaxed]
    )

    // Target ≥ 2,000,000 events/s from one task into one store.
    Benchmark("emit, .none effect") { benchmark in
        let store = FlowStore(initialState: BenchFlow.State(), flow: BenchFlow())
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            await store.emit(.increment)
        }
        benchmark.stopMeasurement()
        blackHole(await store.state.count)
    }

    Benchmark("emit(contentsOf:), .none effect, batches of 1000") { benchmark in
        let store = FlowStore(initialState: BenchFlow.State(), flow: BenchFlow())
        let batch = [BenchFlow.Event](repeating: .increment, count: 1000)
        benchmark.startMeasurement()
        for _ in 0..<(benchmark.scaledIterations.count / 1000) {
            await store.emit(contentsOf: batch)
        }
        benchmark.stopMeasurement()
        blackHole(await store.state.count)
    }

    // One emit that the reducer follows with ten `.send`s: counts events applied.
    Benchmark("emit → .send chain of 10", configuration: .init(scalingFactor: .kilo)) { benchmark in
        let store = FlowStore(initialState: BenchFlow.State(), flow: BenchFlow())
        benchmark.startMeasurement()
        for _ in 0..<(benchmark.scaledIterations.count / 10) {
            await store.emit(.chain(9))
        }
        benchmark.stopMeasurement()
        blackHole(await store.state.count)
    }

    // Target ≥ 200,000 /s: an event starts a cancellable effect, the next one cancels it.
    Benchmark("effect start + cancel") { benchmark in
        let store = FlowStore(initialState: BenchFlow.State(), flow: BenchFlow())
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            await store.emit(.startLong)
            await store.emit(.stopLong)
        }
        benchmark.stopMeasurement()
        await store.waitForEffects()
    }

    // The floor under the one above, in the same run: an actor that starts the same task on one
    // call and cancels it on the next, with none of FlowKit's effect tree, cancel ids or groups.
    Benchmark("actor start + cancel of a task (baseline)") { benchmark in
        let owner = TaskOwner()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            await owner.start()
            await owner.stop()
        }
        benchmark.stopMeasurement()
        await owner.waitForLast()
    }
}

actor TaskOwner {
    private var task: Task<Void, Never>?
    private var last: Task<Void, Never>?

    func start() {
        task = Task { _ = try? await Task.sleep(for: .seconds(3_600)) }
    }

    func stop() {
        task?.cancel()
        last = task
        task = nil
    }

    func waitForLast() async {
        await last?.value
    }
}

struct BenchFlow: Flow {
    struct State: Sendable { var count = 0 }
    enum Event: Sendable {
        case increment
        case chain(Int)
        case startLong
        case stopLong
    }

    enum CancelID { case long }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .increment:
            state.count += 1
            return .none
        case .chain(let remaining):
            state.count += 1
            return remaining > 0 ? .send(.chain(remaining - 1)) : .none
        case .startLong:
            return .run { _ in
                try await Task.sleep(for: .seconds(3600))
            }
            .cancellable(id: CancelID.long)
        case .stopLong:
            return .cancel(id: CancelID.long)
        }
    }
}
