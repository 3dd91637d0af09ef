import Synchronization
import Testing
@testable import ZeroMQ

/// An actor that lives on a loop's thread, counting what it is given and where it ran.
private actor LoopCounter {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    private let loop: IOLoop
    private(set) var total = 0
    private(set) var offLoop = 0
    /// Calls that found another call inside: an executor that ran two jobs at once.
    private(set) var overlaps = 0
    private nonisolated let inside = Atomic<Int>(0)

    init(loop: IOLoop) {
        self.loop = loop
        unownedExecutor = loop.serialExecutor.asUnownedSerialExecutor()
    }

    func add(_ count: Int) {
        if inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 { overlaps += 1 }
        defer { inside.subtract(1, ordering: .sequentiallyConsistent) }
        total += count
        if !loop.queue.wakeup.isLoopThread { offLoop += 1 }
    }
}

/// Collects what a handler was given, and whether each call ran on the loop's thread.
private final class Collected: Sendable {
    let state = Mutex<(messages: [Message], onLoop: [Bool])>(([], []))

    func count() -> Int { state.withLock { $0.messages.count } }

    func waitFor(_ count: Int) async throws {
        try await withTimeout(.seconds(10), "\(count) messages in the handler") {
            while self.count() < count { try await Task.sleep(for: .milliseconds(2)) }
        }
    }
}

@Suite("Receive handlers and actors on the loop")
struct ReceiveHandlerTests {
    @Test("a receive handler takes every batch on the loop's thread, what was buffered before it first, in order")
    func handlerTakesEverythingInOrder() async throws {
        try await withLoop { _, loop in
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push) { try $0.connect(endpoint) }
            for index in 0..<3 { try await push.send(Message("\(index)")) }
            try await withTimeout(.seconds(10), "3 buffered messages") {
                while pull.statistics.bufferedIncoming < 3 { try await Task.sleep(for: .milliseconds(2)) }
            }
            let collected = Collected()
            try await pull.handleReceived { [queue = loop.queue] batch in
                collected.state.withLock {
                    $0.messages += batch
                    $0.onLoop.append(queue.wakeup.isLoopThread)
                }
            }
            #expect(pull.statistics.bufferedIncoming == 0)
            for index in 3..<200 { try await push.send(Message("\(index)")) }
            try await collected.waitFor(200)
            let (messages, onLoop) = collected.state.withLock { ($0.messages, $0.onLoop) }
            #expect(messages == (0..<200).map { Message("\($0)") })
            #expect(!onLoop.isEmpty && onLoop.allSatisfy { $0 })
        }
    }

    @Test("a handled socket has one consumer: receiving from it, or a second handler, is refused")
    func oneConsumer() async throws {
        try await withLoop { _, loop in
            let (pull, _) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            try await pull.handleReceived { _ in }
            await #expect(throws: ZMQError.self) { try await pull.receiveBatch() }
            let second = await #expect(throws: ZMQError.self) { try await pull.handleReceived { _ in } }
            #expect(second?.code == .wrongState)

            // A socket a task waits on cannot take a handler; a closed one neither.
            let (waited, _) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let waiter = Task { try await waited.receiveBatch() }
            try await withTimeout(.seconds(10), "the waiting receive") {
                while waited.channel.state.withLock({ $0.receiveWaiters.isEmpty }) { try await Task.sleep(for: .milliseconds(2)) }
            }
            let refused = await #expect(throws: ZMQError.self) { try await waited.handleReceived { _ in } }
            #expect(refused?.code == .wrongState)
            waiter.cancel()
            await waited.close()
            await #expect(throws: ZMQError.self) { try await waited.handleReceived { _ in } }
        }
    }

    @Test("an actor on the loop's serial executor runs there, and a handler enters it synchronously")
    func actorOnTheLoop() async throws {
        try await withLoop { _, loop in
            let counter = LoopCounter(loop: loop)
            await counter.add(1)  // from the test's task: hops to the loop's thread
            let (pull, endpoint) = try await loop.open(.pull) { try $0.bind(anyLoopbackPort) }
            let push = try await loop.open(.push) { try $0.connect(endpoint) }
            try await pull.handleReceived { batch in counter.assumeIsolated { $0.add(batch.count) } }
            for index in 0..<100 { try await push.send(Message("\(index)")) }
            try await withTimeout(.seconds(10), "100 messages in the actor") {
                while await counter.total < 101 { try await Task.sleep(for: .milliseconds(2)) }
            }
            #expect(await counter.offLoop == 0)
            #expect(loop.serialExecutor.isIsolatingCurrentContext() == false)
        }
    }

    @Test("after its loop stops, an actor on it still runs every call, one at a time")
    func actorAfterTheLoopStops() async throws {
        try await withLoop { _, loop in
            let counter = LoopCounter(loop: loop)
            await loop.shutdown()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<200 { group.addTask { await counter.add(1) } }
            }
            #expect(await counter.total == 200)
            #expect(await counter.offLoop == 200)
            #expect(await counter.overlaps == 0)
        }
    }
}
