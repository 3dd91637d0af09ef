import FlowKitCommands
import FlowKitProcesses
import Foundation
import Glibc
import ZeroMQ

/// Raw ZeroMQ on this machine, in this run: the yardstick every cluster figure is divided by.
///
/// Both sides use the synchronous ``Socket`` on a thread of their own (the bench's dedicated thread
/// and a `flowkit bench-peer` child): the fastest path the ZeroMQ module has, within a few percent
/// of C, so the ratios compare the cluster with what the transport itself can do.
///
/// * **pub/sub**: the bench binds SUB, the child connects XPUB (`XPUB_NODROP`, HWM 100,000), waits
///   for the subscription and sends `messages` 64-byte messages; timed from the first message to
///   the last at the subscriber.
/// * **round trip**: the bench binds REQ, the child echoes with REP; 1,000 warm-up round trips,
///   then `roundTrips` timed one by one.
enum BaselineRunner {
    static let highWaterMark: Int32 = 100_000
    static let warmupRoundTrips = 1_000

    static func run(messages: Int, size: Int, roundTrips: Int, logDirectory: String) async throws -> BaselineResult {
        let context = try ZMQContext()
        defer { context.shutdown() }
        let result: Result<BaselineResult, any Error> = await onDedicatedThread(named: "bench-baseline") {
            Result {
                let rate = try pubSub(context: context, messages: messages, size: size, logDirectory: logDirectory)
                let (p50, p99) = try roundTrip(context: context, count: roundTrips, size: size, logDirectory: logDirectory)
                return BaselineResult(
                    pubsubMsgsPerSecond: rate.rounded(),
                    pubsubMessages: messages,
                    messageBytes: size,
                    rttMicros: .init(p50: p50, p99: p99, count: roundTrips),
                    method: "ZeroMQ.Socket (synchronous, one thread per side) over tcp://127.0.0.1, bench ↔ bench-peer child"
                )
            }
        }
        await context.terminate()
        return try result.get()
    }

    private static func pubSub(context: ZMQContext, messages: Int, size: Int, logDirectory: String) throws -> Double {
        let socket = try Socket(context: context, type: .sub)
        defer { socket.close(linger: .zero) }
        try socket.setOption(.receiveHighWaterMark, highWaterMark)
        try socket.setOption(.receiveTimeout, .seconds(10))
        try socket.subscribe("")
        let endpoint = try socket.bind("tcp://127.0.0.1:*")
        let child = try peer(["pub", endpoint, "\(messages)", "\(size)"], logDirectory: logDirectory)
        defer { reap(child) }
        guard try socket.receive() != nil else { throw failure("no pub/sub message within 10 s", child) }
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 1..<messages {
            guard try socket.receive() != nil else { throw failure("the pub/sub stream stalled for 10 s", child) }
        }
        let elapsed = clock.now - start
        return Double(messages - 1) / seconds(elapsed)
    }

    private static func roundTrip(context: ZMQContext, count: Int, size: Int, logDirectory: String) throws -> (Double, Double) {
        let socket = try Socket(context: context, type: .req)
        defer { socket.close(linger: .zero) }
        try socket.setOption(.receiveTimeout, .seconds(10))
        let endpoint = try socket.bind("tcp://127.0.0.1:*")
        let child = try peer(["echo", endpoint, "\(count + warmupRoundTrips)"], logDirectory: logDirectory)
        defer { reap(child) }
        let request = Message([UInt8](repeating: 0, count: size))
        let clock = ContinuousClock()
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for index in 0..<(count + warmupRoundTrips) {
            let start = clock.now
            _ = try socket.send(request)
            guard try socket.receive() != nil else { throw failure("no echo within 10 s", child) }
            if index >= warmupRoundTrips { samples.append(seconds(clock.now - start) * 1e6) }
        }
        samples.sort()
        func rounded(_ value: Double) -> Double { (value * 10).rounded() / 10 }
        return (rounded(samples[count / 2]), rounded(samples[min(count - 1, Int(Double(count) * 0.99))]))
    }

    /// `flowkit bench-peer <arguments>`, its stderr in `bench-peer-<mode>.log`.
    private static func peer(_ arguments: [String], logDirectory: String) throws -> ChildProcess {
        try ChildProcess.spawn(
            arguments: ["bench-peer"] + arguments,
            name: "bench-peer-\(arguments[0])",
            directory: logDirectory,
            stderrPath: "\(logDirectory)/bench-peer-\(arguments[0]).log",
            whenParentDies: .stopsGracefully
        )
    }

    /// Waits up to 10 s for the child to finish, then kills it (this runs on the bench's own
    /// thread, so it may wait).
    private static func reap(_ child: ChildProcess) {
        for _ in 0..<1_000 where child.isRunning { usleep(10_000) }
        child.signal(SIGKILL)
        for _ in 0..<1_000 where child.isRunning { usleep(10_000) }
    }

    private static func failure(_ message: String, _ child: ChildProcess) -> BenchError {
        BenchError(.baseline, "baseline: \(message); the peer's log: \(child.stderrTail())")
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
