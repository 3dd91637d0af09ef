import Testing
import ZeroMQ

@Suite("Context termination")
struct ContextTerminationTests {
    @Test("unsent messages to an absent peer do not hold up termination (LINGER 0 by default)")
    func noLingerByDefault() async throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .dealer)
        try socket.connect("tcp://127.0.0.1:1")
        for _ in 0..<10 { _ = try socket.send(Message("nobody will read this"), dontWait: true) }
        #expect(try socket.option(.linger) == .zero)
        socket.close()
        try await withTimeout(.seconds(5), "context termination") { await context.terminate() }
    }

    @Test("an I/O loop cannot start on a terminated context")
    func loopOnTerminatedContext() async throws {
        let context = try ZMQContext()
        await context.terminate()
        #expect(context.isTerminating)
        let error = try #require(throws: ZMQError.self) { try IOLoop(context: context, logger: testLogger) }
        #expect(error.code == .terminated)
    }

    @Test("creating a socket on a terminated context throws ETERM instead of touching freed memory")
    func socketAfterTerminate() async throws {
        let context = try ZMQContext()
        await context.terminate()
        let error = try #require(throws: ZMQError.self) { try Socket(context: context, type: .pair) }
        #expect(error.name == "ETERM")
    }
}
