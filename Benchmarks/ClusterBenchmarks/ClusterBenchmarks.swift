import Benchmark
import FlowKitTools
@_spi(Benchmarks) @_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Logging

/// The cluster's hot paths, one process, no sockets: the codec, the sequencer step, and a
/// replica applying entries.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        // Checked against Thresholds/ by `swift package benchmark thresholds check`: time may
        // wander on this noisy machine (relaxed), allocations may not (strict, the default).
        thresholds: [.wallClock: .relaxed, .throughput: .relaxed]
    )

    let entry = Entry(
        seq: 1, epoch: 1, kind: .event, codec: .binary, origin: 1, session: 42, submission: 7,
        submittedAt: 1_700_000_000_000_000, committedAt: 1_700_000_000_000_100,
        address: "load/instance-123", payload: LoadFlow.Event.tick(padding: Array(repeating: 0, count: 16)).binaryEncoded()
    )
    let record = entry.encoded

    Benchmark("entry encode (82 B record)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(entry.encoded) }
    }

    Benchmark("entry decode") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try Entry(decoding: record)) }
    }

    let submissions = (1...100).map { id in
        Submission(submission: UInt64(id), kind: .event, codec: .binary, submittedAt: 0, address: "load/instance-\(id)", payload: [1] + Array(repeating: 0, count: 16))
    }
    let submitFrames = SubmitMessage(origin: 1, session: 42, submissions: submissions).frames

    Benchmark("SUBMIT of 100 decode, per submission", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for _ in 0..<(benchmark.scaledIterations.count / 100) {
            blackHole(try SubmitMessage(frames: submitFrames))
        }
    }

    Benchmark("sequencer step (order + dedup record)") { benchmark in
        var sequencer = Sequencer(epoch: 1, durableHead: 0)
        var submission = submissions[0]
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            submission.submission = UInt64(index + 1)
            blackHole(sequencer.order(submission, origin: 1, session: 42, now: 0))
        }
    }

    Benchmark("replica apply, binary load event") { benchmark in
        var registry = FlowRegistry()
        registry.register(LoadFlow.self, as: "load", codec: .binary)
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let replicas = ReplicaSet(registry: registry, logger: logger)
        var next = entry
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            next.seq = UInt64(index + 1)
            replicas.apply(next, runEffects: false)
        }
    }

    Benchmark("replica apply, JSON counter event") { benchmark in
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let replicas = ReplicaSet(registry: registry, logger: logger)
        var next = entry
        next.codec = .json
        next.address = "counter/a"
        next.payload = Array(#"{"increment":{}}"#.utf8)
        benchmark.startMeasurement()
        for index in benchmark.scaledIterations {
            next.seq = UInt64(index + 1)
            replicas.apply(next, runEffects: false)
        }
    }
}
