import Benchmark
import Logging
import ZeroMQ

/// The ZeroMQ transport in one process over tcp loopback: 64-byte messages through PUB/SUB with
/// batch receive, and DEALER/ROUTER round trips. (Benchmarks/zmq-compare.sh compares the same
/// paths with raw C across processes.)
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput],
        maxDuration: .seconds(3),
        thresholds: [.wallClock: .relaxed, .throughput: .relaxed]
    )

    Benchmark("pub/sub 64 B, batch receive", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, logger: logger)
        let (pub, endpoint) = try await loop.open(.xpub) { socket in
            try socket.setOption(.xpubVerbose, true)
            try socket.setOption(.sendHighWaterMark, 0)
            return try socket.bind("tcp://127.0.0.1:*")
        }
        let sub = try await loop.open(.sub) { socket in
            try socket.setOption(.receiveHighWaterMark, 0)
            try socket.subscribe("")
            try socket.connect(endpoint)
        }
        _ = try await pub.receive()  // the subscription arrived
        let message = Message([UInt8](repeating: 7, count: 64))
        let total = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        async let sent: Void = {
            for _ in 0..<total { try await pub.send(message) }
        }()
        var received = 0
        while received < total { received += try await sub.receiveBatch().count }
        try await sent
        benchmark.stopMeasurement()
        await loop.shutdown()
        await context.terminate()
    }

    // Each sample is 1,000 round trips on a connection already made (the first round trip, which
    // waits for the handshake, is outside the measurement).
    Benchmark("dealer-router round trip", configuration: .init(scalingFactor: .kilo)) { benchmark in
        var logger = Logger(label: "bench")
        logger.logLevel = .critical
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, logger: logger)
        let (router, endpoint) = try await loop.open(.router) { try $0.bind("tcp://127.0.0.1:*") }
        let dealer = try await loop.open(.dealer) { try $0.connect(endpoint) }
        let echo = Task {
            while let batch = try? await router.receiveBatch() {
                for request in batch { try? await router.send(request) }
            }
        }
        let ping = Message([UInt8](repeating: 1, count: 32))
        try await dealer.send(ping)
        _ = try await dealer.receive()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try await dealer.send(ping)
            _ = try await dealer.receive()
        }
        benchmark.stopMeasurement()
        echo.cancel()
        await loop.shutdown()
        await context.terminate()
    }
}
