import Testing
import ZeroMQ

@Suite("Multipart messages of every size")
struct MultipartTests {
    static let sizes = [0, 1, 64, 64 * 1024, 1024 * 1024, 10 * 1024 * 1024]

    @Test("a multipart message round-trips through DEALER → ROUTER → DEALER intact", arguments: sizes)
    func roundTrip(size: Int) async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { try $0.bind(anyLoopbackPort) }
            let dealer = try await loop.open(.dealer) { try $0.connect(endpoint) }
            let payload = pattern(count: size, seed: size % 251)
            let request: Message = [Frame("size=\(size)"), Frame(payload), .empty, Frame(pattern(count: 3, seed: 7))]
            try await dealer.send(request)

            let received = try await receive(1, from: router, within: .seconds(20))[0]
            #expect(received.count == 5)
            #expect(Message(frames: Array(received.dropFirst())) == request)
            #expect(received[2].count == size)
            #expect(received[2].bytes == payload)

            // Echo it back through the router with the routing id in front.
            try await router.send(received)
            let echoed = try await receive(1, from: dealer, within: .seconds(20))[0]
            #expect(echoed == request)
            echoed[1].withUnsafeBytes { buffer in
                #expect(buffer.count == size)
                if size > 0 { #expect(buffer[size - 1] == payload[size - 1]) }
            }
        }
    }

    @Test("the synchronous API moves the same sizes over a PAIR", arguments: sizes)
    func synchronous(size: Int) throws {
        let context = try ZMQContext()
        let left = try Socket(context: context, type: .pair)
        let right = try Socket(context: context, type: .pair)
        defer {
            left.close(linger: .zero)
            right.close(linger: .zero)
        }
        let endpoint = try left.bind(anyLoopbackPort)
        try right.connect(endpoint)
        try right.setOption(.receiveTimeout, .seconds(20))
        let message: Message = ["head", Frame(pattern(count: size, seed: 3))]
        try left.send(message)
        #expect(try right.receive() == message)
    }
}

@Suite("Batch receive")
struct BatchReceiveTests {
    @Test("a batch of mixed small, empty and large frames keeps every byte and boundary")
    func mixedBatch() throws {
        let context = try ZMQContext()
        let pull = try Socket(context: context, type: .pull)
        let push = try Socket(context: context, type: .push)
        defer {
            pull.close(linger: .zero)
            push.close(linger: .zero)
        }
        try pull.bind("inproc://mixed-batch")
        try push.connect("inproc://mixed-batch")
        let sent: [Message] = (0..<100).map { index in
            switch index % 4 {
            case 0: return Message(pattern(count: index, seed: index))
            case 1: return [.empty, Frame(pattern(count: 2000 + index, seed: index)), Frame("\(index)")]
            case 2: return [Frame(pattern(count: 1023, seed: index)), Frame(pattern(count: 1024, seed: index))]
            default: return [Frame("\(index)"), .empty]
            }
        }
        for message in sent { try push.send(message) }
        var received: [Message] = []
        while received.count < sent.count {
            try pull.setOption(.receiveTimeout, .seconds(5))
            let first = try #require(try pull.receive())
            received.append(first)
            try pull.receiveAvailable(into: &received, limit: 37)
        }
        #expect(received == sent)
        // Frames that share a batch buffer still copy out to exactly their own bytes.
        #expect(received[3].map(\.bytes) == sent[3].map(\.bytes))
        #expect(received[4][0].bytes == pattern(count: 4, seed: 4))
    }
}
