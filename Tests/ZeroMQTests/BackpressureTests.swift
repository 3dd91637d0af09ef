import Synchronization
import Testing
import ZeroMQ

@Suite("Backpressure")
struct BackpressureTests {
    @Test("a consumer that does not read keeps the buffer bounded; the sender is held back, nothing is lost")
    func boundedBuffer() async throws {
        try await withLoop { _, loop in
            let capacity = 100
            let total = 5000
            let consumerConfiguration = AsyncSocket.Configuration(receiveBufferCapacity: capacity, receiveBatchLimit: 32)
            let pull = try await loop.open(.pull, configuration: consumerConfiguration) { socket in
                try socket.setOption(.receiveHighWaterMark, 50)
                try socket.bind("inproc://backpressure")
            }
            let producerConfiguration = AsyncSocket.Configuration(sendQueueCapacity: 64)
            let push = try await loop.open(.push, configuration: producerConfiguration) { socket in
                try socket.setOption(.sendHighWaterMark, 50)
                try socket.connect("inproc://backpressure")
            }
            let queued = Atomic<Int>(0)
            let producer = Task {
                for index in 0..<total {
                    try await push.send([Frame("\(index)"), Frame(pattern(count: 256, seed: index))])
                    queued.add(1, ordering: .relaxed)
                }
            }

            // Sample while the consumer is not reading: the sleep paces the sampling only.
            var maxBuffered = 0
            var lastQueued = -1
            var stableSamples = 0
            while stableSamples < 5 {
                let statistics = pull.statistics
                maxBuffered = max(maxBuffered, statistics.bufferedIncoming, statistics.received)
                let now = queued.load(ordering: .relaxed)
                stableSamples = now == lastQueued ? stableSamples + 1 : 0
                lastQueued = now
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(maxBuffered <= capacity)
            #expect(pull.statistics.received <= capacity)
            #expect(pull.statistics.bufferedIncoming == pull.statistics.received)
            // The producer is stuck well short of the total: HWMs + both queues at most.
            #expect(lastQueued < total)
            #expect(lastQueued <= capacity + 50 + 50 + 64 + 1024)

            // Now read everything: all messages arrive, in order, and the buffer stays bounded.
            var next = 0
            while next < total {
                let batch = try await withTimeout(.seconds(10), "message \(next)") { try await pull.receiveBatch() }
                #expect(batch.count <= capacity)
                for message in batch {
                    #expect(message[0].string == "\(next)")
                    next += 1
                }
            }
            try await producer.value
            #expect(pull.statistics.received == total)
        }
    }

    @Test("trySend reports a full outbound queue instead of growing it")
    func trySendFull() async throws {
        try await withLoop { _, loop in
            let configuration = AsyncSocket.Configuration(sendQueueCapacity: 8)
            // A PUSH with no connection at all cannot send, so everything stays queued.
            let push = try await loop.open(.push, configuration: configuration)
            var accepted = 0
            while try push.trySend(["x"]) { accepted += 1 }
            #expect(accepted == 8)
            #expect(push.statistics.queuedOutgoing == 8)
            let batch = (0..<4).map { Message("\($0)") }
            #expect(try push.trySend(contentsOf: batch) == 0)
        }
    }

    @Test("a queue bounded in bytes refuses what does not fit, but takes one oversized message when empty")
    func trySendBoundedInBytes() async throws {
        try await withLoop { _, loop in
            let configuration = AsyncSocket.Configuration(sendQueueCapacity: 1_000, sendQueueBytes: 10_000)
            // A DEALER (FlowKit's engine) connected to nobody listening: what is sent waits in its queue.
            let (dealer, _) = try await loop.open(.dealer, engine: .native, configuration: configuration) { try $0.connect("tcp://127.0.0.1:1") }
            let kilobyte = Message(frames: [Frame(Array(repeating: 1, count: 1_000))])
            var accepted = 0
            while try dealer.trySend(kilobyte) { accepted += 1 }
            #expect(accepted == 10)
            #expect(try dealer.trySend(contentsOf: [Message("x")]) == 0, "full by bytes, though far from the count")

            let (other, _) = try await loop.open(.dealer, engine: .native, configuration: configuration) { try $0.connect("tcp://127.0.0.1:1") }
            let large = Message(frames: [Frame(Array(repeating: 2, count: 50_000))])
            #expect(try other.trySend(large), "a message larger than the bound goes when nothing waits")
            #expect(try !other.trySend(kilobyte))
        }
    }
}

@Suite("Send cancellation")
struct SendCancellationTests {
    @Test("a send waiting for room can be cancelled; its message is not queued")
    func cancelWaitingSend() async throws {
        try await withLoop { _, loop in
            let push = try await loop.open(.push, configuration: AsyncSocket.Configuration(sendQueueCapacity: 1))
            #expect(try push.trySend(["fills the queue"]))
            let waiting = Task { try await push.send(["waits"]) }
            waiting.cancel()
            await #expect(throws: CancellationError.self) { try await waiting.value }
            #expect(push.statistics.queuedOutgoing == 1)
        }
    }
}
