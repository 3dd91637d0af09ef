import Logging
import Glibc
import ZeroMQ

/// 64-byte pub/sub throughput, timed at the subscriber from the first message to the last.
enum Throughput {
    static let logger = Logger(label: "zmq-perf", factory: { _ in SwiftLogNoOpLogHandler() })

    static func subscriber(mode: Mode, peer: Mode, count: Int, size: Int) async throws {
        let context = try ZMQContext()
        let clock = ContinuousClock()
        var bytes = 0
        var measured = 0
        let elapsed: Duration
        var cpuStart = Duration.zero
        switch mode {
        case .sync:
            let socket = try Socket(context: context, type: .sub)
            try socket.setOption(.receiveHighWaterMark, highWaterMark)
            try socket.subscribe("")
            let endpoint = try socket.bind("tcp://127.0.0.1:*")
            let child = spawnSelf(["pub-child", peer.rawValue, endpoint, "\(count)", "\(size)"])
            bytes += try socket.receive()!.byteCount
            let start = clock.now
            cpuStart = cpuTime()
            for _ in 1..<count { bytes += try socket.receive()!.byteCount }
            elapsed = clock.now - start
            measured = count - 1
            cpuStart = cpuTime() - cpuStart
            waitForChild(child)
            socket.close(linger: .zero)
        case .async, .loop:
            let loop = try IOLoop(context: context, name: "perf-io", logger: logger)
            let (socket, endpoint) = try await loop.open(.sub) { socket in
                try socket.setOption(.receiveHighWaterMark, highWaterMark)
                try socket.subscribe("")
                return try socket.bind("tcp://127.0.0.1:*")
            }
            let child = spawnSelf(["pub-child", peer.rawValue, endpoint, "\(count)", "\(size)"])
            (elapsed, measured, bytes, cpuStart) = try await run(mode, on: loop) {
                var cpuStart = Duration.zero
                var received = 0
                var bytes = 0
                var start: ContinuousClock.Instant?
                var firstBatch = 0
                var batches = 0
                defer { if getenv("ZMQ_PERF_DEBUG") != nil { print("batches: \(batches), average \(received / max(batches, 1))") } }
                for try await batch in socket.incoming {
                    batches += 1
                    if start == nil {
                        start = clock.now
                        cpuStart = cpuTime()
                        firstBatch = batch.count
                    }
                    for message in batch { bytes += message.byteCount }
                    received += batch.count
                    if received >= count { break }
                }
                return (clock.now - start!, received - firstBatch, bytes, cpuStart)
            }
            cpuStart = cpuTime() - cpuStart
            waitForChild(child)
            await loop.shutdown()
        }
        let cpu = cpuStart
        await context.terminate()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(measured) / seconds
        print("RESULT pubsub msgs_per_sec=\(Int(rate)) cpu_ns_per_msg=\(Int(cpu.nanoseconds / Double(measured))) messages=\(count) bytes=\(bytes) seconds=\(seconds)")
    }

    static func publisher(mode: Mode, endpoint: String, count: Int, size: Int) async throws {
        let context = try ZMQContext()
        let message = Message([UInt8](repeating: 0, count: size))
        switch mode {
        case .sync:
            let socket = try Socket(context: context, type: .xpub)
            try socket.setOption(.sendHighWaterMark, highWaterMark)
            try socket.setOption(.xpubNoDrop, true)
            try socket.connect(endpoint)
            _ = try socket.receive()  // the subscription: the subscriber is listening
            for _ in 0..<count { try socket.send(message) }
            socket.close(linger: .seconds(30))
        case .async, .loop:
            let loop = try IOLoop(context: context, name: "perf-io", logger: logger)
            let socket = try await loop.open(.xpub) { socket in
                try socket.setOption(.sendHighWaterMark, highWaterMark)
                try socket.setOption(.xpubNoDrop, true)
                try socket.connect(endpoint)
            }
            try await run(mode, on: loop) {
                _ = try await socket.receive()
                let chunk = [Message](repeating: message, count: 512)
                var queued = 0
                while queued < count {
                    let batch = min(chunk.count, count - queued)
                    try await socket.send(contentsOf: batch == chunk.count ? chunk : Array(chunk[..<batch]))
                    queued += batch
                }
            }
            // Wait until libzmq has every message, then let it linger until delivered.
            while socket.statistics.sent < count { try await Task.sleep(for: .milliseconds(1)) }
            await socket.close(linger: .seconds(30))
            await loop.shutdown()
        }
        await context.terminate()
    }
}
