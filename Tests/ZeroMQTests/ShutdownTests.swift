import Foundation
import Synchronization
import Testing
import ZeroMQ

@Suite("Shutdown")
struct ShutdownTests {
    /// Starts a flood (PUB → SUB, DEALER ⇄ ROUTER echo) and returns the tasks driving it.
    func startTraffic(_ loop: IOLoop) async throws -> [Task<Void, any Error>] {
        let (publisher, pubEndpoint) = try await loop.open(.pub) { try $0.bind(anyLoopbackPort) }
        let subscriber = try await loop.open(.sub) { socket in
            try socket.subscribe("")
            try socket.connect(pubEndpoint)
        }
        let (router, routerEndpoint) = try await loop.open(.router) { try $0.bind(anyLoopbackPort) }
        let dealer = try await loop.open(.dealer) { try $0.connect(routerEndpoint) }
        let payload = Message([UInt8](repeating: 7, count: 512))
        let started = OneShotFlag()
        let tasks: [Task<Void, any Error>] = [
            Task { while true { try await publisher.send(payload) } },
            Task {
                for try await _ in subscriber.incoming { started.set() }
            },
            Task { for try await batch in router.incoming { try await router.send(contentsOf: batch) } },
            Task { while true { try await dealer.send(payload) } },
            Task { for try await _ in dealer.incoming {} },
        ]
        try await withTimeout(.seconds(10), "traffic to start") { await started.wait() }
        return tasks
    }

    @Test("terminating the context in the middle of traffic finishes promptly; consumers end, senders get an error")
    func terminateDuringTraffic() async throws {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, logger: testLogger)
        let tasks = try await startTraffic(loop)
        let clock = ContinuousClock()
        // What this catches is a termination that hangs (a socket left open, linger forever), not
        // a slow one: CI runs it beside a release build, where it once took 5.6 s.
        let elapsed = try await clock.measure {
            try await withTimeout(.seconds(20), "context termination") { await context.terminate() }
        }
        #expect(elapsed < .seconds(20))
        for task in tasks {
            let result = try await withTimeout(.seconds(5), "a traffic task to end") { await task.result }
            if case .failure(let error as ZMQError) = result {
                #expect(error.code == .socketClosed || error.code == .terminated)
            }
        }
        await loop.shutdown()
    }

    @Test("stopping the loop in the middle of traffic closes every socket")
    func loopShutdownDuringTraffic() async throws {
        try await withLoop { _, loop in
            let tasks = try await startTraffic(loop)
            try await withTimeout(.seconds(5), "loop shutdown") { await loop.shutdown() }
            for task in tasks {
                _ = try await withTimeout(.seconds(5), "a traffic task to end") { await task.result }
            }
            await #expect(throws: ZMQError.self) { _ = try await loop.open(.pair) }
        }
    }

    @Test("closing a handle ends a consumer that is waiting on it")
    func closeEndsConsumer() async throws {
        try await withLoop { _, loop in
            let (pull, _) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let consumer = Task {
                var batches = 0
                for try await _ in pull.incoming { batches += 1 }
                return batches
            }
            await pull.close()
            #expect(try await withTimeout(.seconds(5), "the consumer to end") { try await consumer.value } == 0)
            #expect(pull.isClosed)
            await #expect(throws: ZMQError.self) { try await pull.send(["late"]) }
            let error = await #expect(throws: ZMQError.self) { try await pull.receiveBatch() }
            #expect(error?.code == .socketClosed)
        }
    }

    @Test("a blocking receive on a thread we own returns ETERM when the context shuts down")
    func blockingReceiveGetsTerminated() async throws {
        let context = try ZMQContext()
        let outcome = OneShotBox<String>()
        let ready = OneShotFlag()
        let thread = Thread {
            do {
                let socket = try Socket(context: context, type: .pull)
                _ = try socket.bind("inproc://blocked")
                ready.set()
                do {
                    _ = try socket.receive()
                    outcome.set("received")
                } catch let error as ZMQError {
                    outcome.set(error.name)
                }
                socket.close(linger: .zero)
            } catch {
                outcome.set("setup failed: \(error)")
            }
        }
        thread.start()
        try await withTimeout(.seconds(5), "the thread to block") { await ready.wait() }
        try await withTimeout(.seconds(5), "context termination") { await context.terminate() }
        #expect(try await withTimeout(.seconds(5), "the outcome") { await outcome.value() } == "ETERM")
    }

    @Test("cancelling a task waiting to receive throws CancellationError and leaves the socket usable")
    func cancelReceive() async throws {
        try await withLoop { _, loop in
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let waiter = Task { try await pull.receiveBatch() }
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            let push = try await loop.open(.push) { try $0.connect(endpoint) }
            try await push.send(["after cancel"])
            #expect(try await receive(1, from: pull) == [["after cancel"]])
        }
    }
}

/// A flag set once and awaited (for test coordination without sleeps).
final class OneShotFlag: Sendable {
    private let box = OneShotBox<Void>()
    func set() { box.set(()) }
    func wait() async { await box.value() }
}

/// A value set once and awaited.
final class OneShotBox<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiters: [CheckedContinuation<Value, Never>])>((nil, []))

    func set(_ value: Value) {
        let waiters: [CheckedContinuation<Value, Never>] = state.withLock { state in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: value) }
    }

    func value() async -> Value {
        await withCheckedContinuation { continuation in
            let ready: Value? = state.withLock { state in
                if let value = state.value { return value }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
