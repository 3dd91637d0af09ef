import Logging
import ZeroMQ

/// REQ/REP round-trip latency: 1000 warm-up round trips, then every one timed.
enum Latency {
    static let warmup = 1000
    static let logger = Logger(label: "zmq-perf", factory: { _ in SwiftLogNoOpLogHandler() })

    static func requester(mode: Mode, peer: Mode, count: Int, size: Int) async throws {
        let context = try ZMQContext()
        let clock = ContinuousClock()
        let request = Message([UInt8](repeating: 0, count: size))
        var samples: [Duration] = []
        samples.reserveCapacity(count)
        var cpuStart = Duration.zero
        var cpu = Duration.zero
        switch mode {
        case .sync:
            let socket = try Socket(context: context, type: .req)
            let endpoint = try socket.bind("tcp://127.0.0.1:*")
            let child = spawnSelf(["rep-child", peer.rawValue, endpoint, "\(count)"])
            for index in 0..<(count + warmup) {
                let start = clock.now
                try socket.send(request)
                _ = try socket.receive()
                if index >= warmup { samples.append(clock.now - start) }
                if index == warmup - 1 { cpuStart = cpuTime() }
            }
            cpu = cpuTime() - cpuStart
            waitForChild(child)
            socket.close(linger: .zero)
        case .async, .loop:
            let loop = try IOLoop(context: context, name: "perf-io", logger: logger)
            let (socket, endpoint) = try await loop.open(.req) { try $0.bind("tcp://127.0.0.1:*") }
            let child = spawnSelf(["rep-child", peer.rawValue, endpoint, "\(count)"])
            (samples, cpu) = try await run(mode, on: loop) {
                var cpuStart = Duration.zero
                var samples: [Duration] = []
                samples.reserveCapacity(count)
                for index in 0..<(count + warmup) {
                    let start = clock.now
                    try await socket.send(request)
                    _ = try await socket.receive()
                    if index >= warmup { samples.append(clock.now - start) }
                    if index == warmup - 1 { cpuStart = cpuTime() }
                }
                return (samples, cpuTime() - cpuStart)
            }
            waitForChild(child)
            await loop.shutdown()
        }
        await context.terminate()
        samples.sort()
        func microseconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
        }
        let median = microseconds(samples[count / 2])
        let p99 = microseconds(samples[Int(Double(count) * 0.99)])
        print("RESULT reqrep median_us=\(rounded(median)) p99_us=\(rounded(p99)) cpu_us_per_rt=\(rounded(cpu.nanoseconds / 1000 / Double(count))) roundtrips=\(count)")
    }

    static func echo(mode: Mode, endpoint: String, count: Int) async throws {
        let context = try ZMQContext()
        let total = count + warmup
        switch mode {
        case .sync:
            let socket = try Socket(context: context, type: .rep)
            try socket.connect(endpoint)
            for _ in 0..<total { try socket.send(try socket.receive()!) }
            socket.close(linger: .seconds(1))
        case .async, .loop:
            let loop = try IOLoop(context: context, name: "perf-io", logger: logger)
            let socket = try await loop.open(.rep) { try $0.connect(endpoint) }
            try await run(mode, on: loop) {
                var answered = 0
                for try await batch in socket.incoming {
                    for message in batch { try await socket.send(message) }
                    answered += batch.count
                    if answered >= total { break }
                }
            }
            while socket.statistics.sent < total { try await Task.sleep(for: .milliseconds(1)) }
            await socket.close(linger: .seconds(1))
            await loop.shutdown(linger: nil)
        }
        await context.terminate()
    }

    static func rounded(_ value: Double) -> Double {
        (value * 10).rounded() / 10
    }
}
