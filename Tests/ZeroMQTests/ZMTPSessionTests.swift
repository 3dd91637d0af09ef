import Testing
@testable import ZeroMQ

/// The ZMTP engine's protocol state, fed bytes in memory: two sessions talk to each other, and
/// hand-made bytes stand in for broken or hostile peers.
@Suite("ZMTP session")
struct ZMTPSessionTests {
    /// Moves every byte each side has queued to the other, until neither has any; returns what
    /// each side saw.
    static func exchange(_ a: inout ZMTPSession, _ b: inout ZMTPSession, chunk: Int = .max) throws -> (a: [ZMTPSession.Event], b: [ZMTPSession.Event]) {
        var seenByA: [ZMTPSession.Event] = [], seenByB: [ZMTPSession.Event] = []
        while a.hasOutbound || b.hasOutbound {
            try pass(from: &a, to: &b, chunk: chunk, events: &seenByB)
            try pass(from: &b, to: &a, chunk: chunk, events: &seenByA)
        }
        return (seenByA, seenByB)
    }

    static func pass(from sender: inout ZMTPSession, to receiver: inout ZMTPSession, chunk: Int, events: inout [ZMTPSession.Event]) throws {
        while sender.hasOutbound {
            var bytes: [UInt8] = []
            sender.withOutbound { buffer in
                bytes = Array(buffer.prefix(chunk))
                return bytes.count
            }
            receiver.append(bytes)
            while let event = try receiver.nextEvent() { events.append(event) }
        }
    }

    static func session(_ type: SocketType, identity: String = "", limit: Int? = nil) -> ZMTPSession {
        ZMTPSession(.init(socketType: type, identity: Array(identity.utf8), maxMessageBytes: limit))
    }

    @Test("a DEALER and a ROUTER shake hands, learn each other's type and identity, and trade multipart messages", arguments: [Int.max, 1, 7])
    func dealerAndRouter(chunk: Int) throws {
        var dealer = Self.session(.dealer, identity: "alice"), router = Self.session(.router)
        dealer.send(["sent before the handshake"])
        let handshake = try Self.exchange(&dealer, &router, chunk: chunk)
        #expect(handshake.a == [.ready(peerType: .router, identity: [])])
        #expect(handshake.b == [.ready(peerType: .dealer, identity: Array("alice".utf8)), .message(["sent before the handshake"])])

        let long = Frame([UInt8](repeating: 0xAB, count: 70_000))
        dealer.send(Message(frames: ["", long, "tail"]))
        router.send(["one"])
        router.send(Message(frames: [Frame([UInt8](repeating: 7, count: 256)), .empty]))
        let traffic = try Self.exchange(&dealer, &router, chunk: chunk)
        #expect(traffic.b == [.message(Message(frames: ["", long, "tail"]))])
        #expect(traffic.a == [.message(["one"]), .message(Message(frames: [Frame([UInt8](repeating: 7, count: 256)), .empty]))])
    }

    @Test("a PING is answered with a PONG carrying its context; the PONG is no event")
    func pingPong() throws {
        var a = Self.session(.dealer), b = Self.session(.router)
        _ = try Self.exchange(&a, &b)
        let ping = ZMTPCommand.ping(ttl: 30, context: Array("ctx".utf8)).body
        b.append([0x04, UInt8(ping.count)] + ping)
        #expect(try b.nextEvent() == nil)
        var reply: [UInt8] = []
        b.withOutbound { reply = Array($0); return $0.count }
        #expect(reply == [0x04, 8, 4] + Array("PONG".utf8) + Array("ctx".utf8))
        a.ping(ttl: .seconds(3))
        let events = try Self.exchange(&a, &b)
        #expect(events.a.isEmpty && events.b.isEmpty)
    }

    @Test("subscriptions reach a PUB or XPUB as events, as 3.1 commands and as 3.0 prefixed messages")
    func subscriptions() throws {
        var sub = Self.session(.sub), xpub = Self.session(.xpub)
        sub.subscribe(Array("topic".utf8))
        let handshake = try Self.exchange(&sub, &xpub)
        #expect(handshake.b == [.ready(peerType: .sub, identity: []), .subscribe(prefix: Array("topic".utf8))])
        sub.subscribe(Array("topic".utf8), false)
        sub.send([Frame([1] + Array("old-style".utf8))])
        xpub.send(["topic.x", "body"])
        let events = try Self.exchange(&sub, &xpub)
        #expect(events.b == [.cancel(prefix: Array("topic".utf8)), .subscribe(prefix: Array("old-style".utf8))])
        #expect(events.a == [.message(["topic.x", "body"])])
    }

    @Test("a peer that is not ZMTP 3 with NULL, or whose socket type does not fit, is refused with the reason")
    func refusedPeers() throws {
        func refusal(_ bytes: [UInt8], to type: SocketType = .router) -> ZMTPError.Kind? {
            var session = Self.session(type)
            session.append(bytes)
            do {
                while try session.nextEvent() != nil {}
                return nil
            } catch {
                return error.kind
            }
        }
        let greeting = ZMTPGreeting().encoded
        #expect(refusal(Array("GET / HTTP/1.1\r\n".utf8)) == .notZMTP)
        var version2 = greeting
        version2[10] = 1
        #expect(refusal(version2) == .unsupportedVersion)
        #expect(refusal(ZMTPGreeting(mechanism: "CURVE").encoded) == .mechanismMismatch)

        var sub = Self.session(.sub)
        var bytes: [UInt8] = []
        sub.withOutbound { bytes = Array($0); return $0.count }
        #expect(refusal(bytes, to: .dealer) == .incompatibleSocketType)

        func afterGreeting(_ frame: [UInt8]) -> ZMTPError.Kind? { refusal(greeting + frame) }
        #expect(afterGreeting([0x00, 2, 65, 66]) == .malformed)
        #expect(afterGreeting([0x04, 7, 5] + Array("ERROR".utf8) + [0]) == .rejectedByPeer)
        #expect(afterGreeting([0x05, 1, 1]) == .malformed)
        #expect(afterGreeting([0x40, 0]) == .malformed)
        #expect(afterGreeting([0x04, 6, 5] + Array("READY".utf8)) == .malformed)
        #expect(afterGreeting([0x04, 20, 5] + Array("READY".utf8) + [11] + Array("Socket-Type".utf8) + [0, 0, 0, 9]) == .malformed)
    }

    @Test("the size limit applies to each frame, as libzmq's does; a larger one is refused before its bytes arrive")
    func sizeLimit() throws {
        var dealer = Self.session(.dealer), router = Self.session(.router, limit: 1_000)
        _ = try Self.exchange(&dealer, &router)
        let underLimit = Message(frames: [Frame([UInt8](repeating: 1, count: 600)), Frame([UInt8](repeating: 2, count: 600))])
        dealer.send(underLimit)
        #expect(try Self.exchange(&dealer, &router).b == [.message(underLimit)])

        dealer.send(Message(frames: [Frame([UInt8](repeating: 3, count: 1_001))]))
        var header: [UInt8] = []
        dealer.withOutbound { buffer in
            header = Array(buffer.prefix(9))
            return header.count
        }
        router.append(header)
        #expect(throws: ZMTPError.self) { while try router.nextEvent() != nil {} }
    }
}
