import ArgumentParser
import Logging
import ZeroMQ

/// `flowkit bench-peer`: the far side of `flowkit bench`'s raw ZeroMQ baseline, run by the bench
/// as a child process of the same binary, and the echo server `Benchmarks/hop-cost.c` measures
/// FlowKit's I/O loop with. Hidden: nobody runs it by hand.
struct BenchPeerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-peer",
        abstract: "The raw ZeroMQ peer of flowkit bench's baseline (started by flowkit bench).",
        shouldDisplay: false
    )

    @Argument(help: "pub: connect XPUB and publish; echo: connect REP and echo; loop-echo: bind a ROUTER on an I/O loop (the ZMTP engine) and echo, as a node's client socket does.")
    var role: String

    @Argument(help: "The bench's endpoint.")
    var endpoint: String

    @Argument(help: "Messages to publish, or round trips to answer.")
    var count: Int

    @Argument(help: "Message size in bytes (pub).")
    var size: Int = 64

    func validate() throws {
        guard ["pub", "echo", "loop-echo"].contains(role) else { throw ValidationError("role must be pub, echo or loop-echo") }
        guard count > 0, size >= 0 else { throw ValidationError("count must be positive") }
    }

    func run() async throws {
        if role == "loop-echo" { return try await loopEcho() }
        let context = try ZMQContext()
        // The bench's baseline measures the synchronous Socket on one thread per side.
        switch role {
        case "pub":
            let socket = try Socket(context: context, type: .xpub)
            try socket.setOption(.sendHighWaterMark, BaselineRunner.highWaterMark)
            try socket.setOption(.xpubNoDrop, true)
            try socket.setOption(.receiveTimeout, .seconds(10))
            try socket.connect(endpoint)
            // The subscription: the subscriber is listening.
            guard try socket.receive() != nil else { throw ValidationError("no subscriber at \(endpoint) within 10 s") }
            let message = Message([UInt8](repeating: 0, count: size))
            for _ in 0..<count { _ = try socket.send(message) }
            socket.close(linger: .seconds(30))
        default:
            let socket = try Socket(context: context, type: .rep)
            try socket.setOption(.receiveTimeout, .seconds(10))
            try socket.connect(endpoint)
            for _ in 0..<count {
                guard let request = try socket.receive() else { break }
                _ = try socket.send(request)
            }
            socket.close(linger: .seconds(1))
        }
        await context.terminate()
    }

    /// Echoes `count` messages on a ROUTER served by an I/O loop and the ZMTP engine, handled on
    /// the loop's thread by a task that prefers it: the path a node's client socket takes, without
    /// the node. What one hop costs there, against libzmq and plain TCP, is what hop-cost.c prints.
    private func loopEcho() async throws {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "echo-io", logger: Logger(label: "flowkit.bench-peer"))
        let (socket, _) = try await loop.open(.router, engine: .native) { socket in try socket.bind(endpoint) }
        let echo = Task(executorPreference: loop) {
            var echoed = 0
            while echoed < count, let batch = try? await socket.receiveBatch() {
                echoed += batch.count
                _ = try? socket.trySend(contentsOf: batch)
            }
        }
        await echo.value
        await socket.close(linger: .seconds(1))
        await loop.shutdown()
        await context.terminate()
    }
}
