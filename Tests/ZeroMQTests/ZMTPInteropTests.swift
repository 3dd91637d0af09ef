import Glibc
import Testing
@testable import ZeroMQ

/// FlowKit's ZMTP engine against libzmq 4.3 over real loopback TCP: each pair of socket types
/// FlowKit uses, in both directions, with libzmq's heartbeats on.
///
/// The libzmq sockets are used synchronously on the test's thread (their I/O runs on libzmq's own
/// thread); the engine's stream is pumped on the test's thread between their calls.
@Suite("ZMTP engine against libzmq")
struct ZMTPInteropTests {
    struct Closed: Error, CustomStringConvertible {
        let description = "the peer closed the connection"
    }

    /// Pumps `stream` until the session has an event.
    static func nextEvent(_ stream: ZMTPStream, within limit: Duration = .seconds(5)) throws -> ZMTPSession.Event {
        let deadline = ContinuousClock.now + limit
        while true {
            try stream.flush()
            if let event = try stream.session.nextEvent() { return event }
            guard !stream.isClosed else { throw Closed() }
            let left = deadline - .now
            guard left > .zero else { throw TimeoutError(what: "a ZMTP event", after: limit) }
            try waitReadable(stream.fileDescriptor, within: left, writable: stream.session.hasOutbound)
            try stream.readAvailable()
        }
    }

    /// Keeps `stream` serviced (PINGs answered) for `duration`; returns whether it stayed open.
    static func serve(_ stream: ZMTPStream, for duration: Duration) throws -> Bool {
        let deadline = ContinuousClock.now + duration
        while ContinuousClock.now < deadline, !stream.isClosed {
            try stream.flush()
            while try stream.session.nextEvent() != nil {}
            try waitReadable(stream.fileDescriptor, within: deadline - .now, writable: stream.session.hasOutbound)
            try stream.readAvailable()
        }
        return !stream.isClosed
    }

    static func waitReadable(_ fd: Int32, within limit: Duration, writable: Bool = false) throws {
        var entry = pollfd(fd: fd, events: Int16(POLLIN) | (writable ? Int16(POLLOUT) : 0), revents: 0)
        _ = poll(&entry, 1, Int32(max(1, limit.components.seconds * 1000 + limit.components.attoseconds / 1_000_000_000_000_000)))
    }

    static func accept(_ listener: Int32) throws -> Int32 {
        try waitReadable(listener, within: .seconds(5))
        guard let fd = try TCPSocket.accept(listener) else { throw TimeoutError(what: "a connection", after: .seconds(5)) }
        return fd
    }

    static func port(of socket: Socket) throws -> UInt16 {
        UInt16(try socket.lastEndpoint().split(separator: ":").last!)!
    }

    static func zmqSocket(_ context: ZMQContext, _ type: SocketType) throws -> Socket {
        let socket = try Socket(context: context, type: type)
        try socket.setOption(.receiveTimeout, .seconds(5))
        try socket.setOption(.linger, .zero)
        return socket
    }

    static func session(_ type: SocketType, identity: String = "") -> ZMTPSession {
        ZMTPSession(.init(socketType: type, identity: Array(identity.utf8), maxMessageBytes: 1 << 20))
    }

    @Test("the engine's DEALER reaches a libzmq ROUTER under its identity, multipart and large frames both ways")
    func dealerToLibzmqRouter() throws {
        let context = try ZMQContext()
        let router = try Self.zmqSocket(context, .router)
        defer { router.close() }
        _ = try router.bind("tcp://127.0.0.1:*")
        let stream = ZMTPStream(fileDescriptor: try TCPSocket.connect(host: "127.0.0.1", port: try Self.port(of: router)), session: Self.session(.dealer, identity: "alice"))
        #expect(try Self.nextEvent(stream) == .ready(peerType: .router, identity: []))

        let large = Frame([UInt8](repeating: 0x5A, count: 300_000))
        stream.session.send(Message(frames: ["hello", .empty, large]))
        try stream.flush()
        while stream.session.hasOutbound { _ = try Self.serve(stream, for: .milliseconds(10)) }
        #expect(try router.receive() == Message(frames: ["alice", "hello", .empty, large]))

        _ = try router.send(Message(frames: ["alice", "world", large]))
        #expect(try Self.nextEvent(stream) == .message(Message(frames: ["world", large])))
    }

    @Test("a libzmq DEALER reaches the engine's ROUTER with its routing id and gets the reply")
    func libzmqDealerToRouter() throws {
        let context = try ZMQContext()
        let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let dealer = try Self.zmqSocket(context, .dealer)
        defer { dealer.close() }
        try dealer.setOption(.routingID, Array("bob".utf8))
        try dealer.connect("tcp://127.0.0.1:\(port)")
        let stream = ZMTPStream(fileDescriptor: try Self.accept(listener), session: Self.session(.router))
        #expect(try Self.nextEvent(stream) == .ready(peerType: .dealer, identity: Array("bob".utf8)))

        _ = try dealer.send(["ping", "two"])
        #expect(try Self.nextEvent(stream) == .message(["ping", "two"]))
        stream.session.send(["pong"])
        try stream.flush()
        #expect(try dealer.receive() == ["pong"])
    }

    @Test("the engine's SUB subscribes at a libzmq XPUB and gets only what matches")
    func subToLibzmqXPub() throws {
        let context = try ZMQContext()
        let xpub = try Self.zmqSocket(context, .xpub)
        defer { xpub.close() }
        _ = try xpub.bind("tcp://127.0.0.1:*")
        let stream = ZMTPStream(fileDescriptor: try TCPSocket.connect(host: "127.0.0.1", port: try Self.port(of: xpub)), session: Self.session(.sub))
        stream.session.subscribe(Array("news".utf8))
        #expect(try Self.nextEvent(stream) == .ready(peerType: .xpub, identity: []))
        try stream.flush()
        #expect(try xpub.receive() == Message([1] + Array("news".utf8)))

        for text in ["news.1", "sport.1", "news.2"] { _ = try xpub.send(Message(frames: [Frame(text), "body"])) }
        #expect(try Self.nextEvent(stream) == .message(["news.1", "body"]))
        #expect(try Self.nextEvent(stream) == .message(["news.2", "body"]))
    }

    @Test("a libzmq SUB's subscriptions reach the engine's XPUB as events, and its messages reach the SUB")
    func libzmqSubToXPub() throws {
        let context = try ZMQContext()
        let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let sub = try Self.zmqSocket(context, .sub)
        defer { sub.close() }
        try sub.subscribe("a.")
        try sub.connect("tcp://127.0.0.1:\(port)")
        let stream = ZMTPStream(fileDescriptor: try Self.accept(listener), session: Self.session(.xpub))
        #expect(try Self.nextEvent(stream) == .ready(peerType: .sub, identity: []))
        #expect(try Self.nextEvent(stream) == .subscribe(prefix: Array("a.".utf8)))
        stream.session.send(["a.1", "payload"])
        try stream.flush()
        #expect(try sub.receive() == ["a.1", "payload"])

        try sub.unsubscribe("a.")
        #expect(try Self.nextEvent(stream) == .cancel(prefix: Array("a.".utf8)))
    }

    @Test("libzmq's heartbeats keep a served connection open and drop one that never answers")
    func heartbeats() throws {
        let context = try ZMQContext()
        let router = try Self.zmqSocket(context, .router)
        defer { router.close() }
        try router.setOption(.heartbeatInterval, .milliseconds(50))
        try router.setOption(.heartbeatTimeout, .milliseconds(250))
        _ = try router.bind("tcp://127.0.0.1:*")
        let port = try Self.port(of: router)
        let served = ZMTPStream(fileDescriptor: try TCPSocket.connect(host: "127.0.0.1", port: port), session: Self.session(.dealer, identity: "served"))
        let silent = ZMTPStream(fileDescriptor: try TCPSocket.connect(host: "127.0.0.1", port: port), session: Self.session(.dealer, identity: "silent"))
        _ = try Self.nextEvent(served)
        _ = try Self.nextEvent(silent)

        // The silent stream is not read meanwhile: its PINGs go unanswered.
        #expect(try Self.serve(served, for: .seconds(1)))
        #expect(try !Self.serve(silent, for: .seconds(1)))
        _ = try router.send(["served", "still here"])
        #expect(try Self.nextEvent(served) == .message(["still here"]))
    }
}
