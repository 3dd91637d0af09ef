import Foundation
import Testing
@testable import ZeroMQ

@Suite("Synchronous sockets")
struct SocketTests {
    @Test("bind to port * returns the real port")
    func bindResolvesPort() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .rep)
        defer { socket.close(linger: .zero) }
        let endpoint = try socket.bind(anyLoopbackPort)
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        let port = Int(endpoint.split(separator: ":").last ?? "")
        #expect(port != nil && port! > 0)
        #expect(try socket.lastEndpoint() == endpoint)
        try socket.unbind(endpoint)
    }

    @Test("options round-trip with their Swift types")
    func options() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .dealer)
        defer { socket.close(linger: .zero) }
        try socket.setOption(.sendHighWaterMark, 123)
        try socket.setOption(.receiveHighWaterMark, 456)
        try socket.setOption(.linger, .milliseconds(250))
        try socket.setOption(.maxMessageSize, 4096)
        try socket.setOption(.routingID, Array("client-7".utf8))
        try socket.setOption(.heartbeatInterval, .seconds(1))
        try socket.setOption(.heartbeatTimeout, .seconds(3))
        try socket.setOption(.heartbeatTTL, .seconds(5))
        try socket.setOption(.reconnectInterval, .milliseconds(50))
        try socket.setOption(.reconnectIntervalMax, .seconds(2))
        try socket.setOption(.handshakeInterval, .seconds(4))
        try socket.setOption(.immediate, true)
        #expect(try socket.option(.sendHighWaterMark) == 123)
        #expect(try socket.option(.receiveHighWaterMark) == 456)
        #expect(try socket.option(.linger) == .milliseconds(250))
        #expect(try socket.option(.maxMessageSize) == 4096)
        #expect(try socket.option(.routingID) == Array("client-7".utf8))
        #expect(try socket.option(.heartbeatInterval) == .seconds(1))
        #expect(try socket.option(.heartbeatTimeout) == .seconds(3))
        #expect(try socket.option(.heartbeatTTL) == .seconds(5))
        #expect(try socket.option(.reconnectInterval) == .milliseconds(50))
        #expect(try socket.option(.reconnectIntervalMax) == .seconds(2))
        #expect(try socket.option(.handshakeInterval) == .seconds(4))
        #expect(try socket.option(.immediate))
        #expect(try socket.events() == .writable || socket.events().isEmpty)
        #expect(try socket.fileDescriptor() >= 0)
    }

    @Test("a write-only option cannot be read")
    func writeOnly() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .router)
        defer { socket.close(linger: .zero) }
        try socket.setOption(.routerMandatory, true)
        #expect(throws: ZMQError.self) { try socket.option(.routerMandatory) }
    }

    @Test("non-blocking receive and send return nil and false instead of throwing EAGAIN")
    func wouldBlock() throws {
        let context = try ZMQContext()
        let pull = try Socket(context: context, type: .pull)
        let push = try Socket(context: context, type: .push)
        defer {
            pull.close(linger: .zero)
            push.close(linger: .zero)
        }
        try pull.bind("inproc://would-block")
        #expect(try pull.receive(dontWait: true) == nil)
        #expect(try push.send(Message("no peer yet"), dontWait: true) == false)
        try push.connect("inproc://would-block")
        #expect(try push.send(Message("now"), dontWait: true))
        #expect(try pull.receive() == Message("now"))
    }

    @Test("REQ/REP round trip over ipc:// in a private directory")
    func requestReplyOverIPC() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try ZMQContext()
        let rep = try Socket(context: context, type: .rep)
        let req = try Socket(context: context, type: .req)
        defer {
            rep.close(linger: .zero)
            req.close(linger: .zero)
        }
        let endpoint = try rep.bind("ipc://\(directory.path)/rep.sock")
        try req.connect(endpoint)
        try req.setOption(.receiveTimeout, .seconds(5))
        try rep.setOption(.receiveTimeout, .seconds(5))
        for round in 0..<10 {
            try req.send(["ping", Frame("\(round)")])
            let request = try #require(try rep.receive())
            #expect(request == ["ping", Frame("\(round)")])
            try rep.send(["pong", request[1]])
            #expect(try req.receive() == ["pong", Frame("\(round)")])
        }
    }

    @Test("frames are read one by one with their more flag")
    func frameByFrame() throws {
        let context = try ZMQContext()
        let pair1 = try Socket(context: context, type: .pair)
        let pair2 = try Socket(context: context, type: .pair)
        defer {
            pair1.close(linger: .zero)
            pair2.close(linger: .zero)
        }
        try pair1.bind("inproc://frames")
        try pair2.connect("inproc://frames")
        try pair1.send("a", more: true)
        try pair1.send(.empty, more: true)
        try pair1.send("c", more: false)
        let first = try #require(try pair2.receiveFrame())
        #expect(first.frame == "a" && first.more)
        #expect(try pair2.hasMoreFrames())
        let second = try #require(try pair2.receiveFrame())
        #expect(second.frame.isEmpty && second.more)
        let third = try #require(try pair2.receiveFrame())
        #expect(third.frame == "c" && !third.more)
    }
}
