import CZeroMQ
import Testing
@testable import ZeroMQ

@Suite("Errors")
struct ErrorTests {
    @Test("a malformed TCP endpoint gives EINVAL with a name, a message and the operation")
    func badPort() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .rep)
        defer { socket.close(linger: .zero) }
        let error = try #require(throws: ZMQError.self) { try socket.bind("tcp://127.0.0.1:notaport") }
        #expect(error.name == "EINVAL")
        #expect(error.code == .invalid)
        #expect(error.errno == EINVAL)
        #expect(!error.message.isEmpty)
        #expect(error.operation.contains("zmq_bind(tcp://127.0.0.1:notaport)"))
        #expect(error.description.contains("EINVAL"))
        #expect(error.description.contains("endpoint syntax"))
    }

    @Test("an unknown transport gives EPROTONOSUPPORT")
    func unknownTransport() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .dealer)
        defer { socket.close(linger: .zero) }
        let error = try #require(throws: ZMQError.self) { try socket.connect("carrier-pigeon://coop") }
        #expect(error.name == "EPROTONOSUPPORT")
        #expect(error.message == String(cString: zmq_strerror(EPROTONOSUPPORT)))
    }

    @Test("binding the same port twice gives EADDRINUSE")
    func addressInUse() throws {
        let context = try ZMQContext()
        let first = try Socket(context: context, type: .pull)
        let second = try Socket(context: context, type: .pull)
        defer {
            first.close(linger: .zero)
            second.close(linger: .zero)
        }
        let endpoint = try first.bind(anyLoopbackPort)
        let error = try #require(throws: ZMQError.self) { try second.bind(endpoint) }
        #expect(error.code == .addressInUse)
        #expect(error.name == "EADDRINUSE")
    }

    @Test("a closed socket reports SOCKET_CLOSED")
    func closedSocket() throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .push)
        socket.close()
        let error = try #require(throws: ZMQError.self) { try socket.send(Message("x")) }
        #expect(error.code == .socketClosed)
        #expect(error.name == "SOCKET_CLOSED")
        #expect(error.errno == 0)
    }

    @Test("REQ sending twice gives EFSM", arguments: [false, true])
    func wrongState(dontWait: Bool) throws {
        let context = try ZMQContext()
        let socket = try Socket(context: context, type: .req)
        defer { socket.close(linger: .zero) }
        try socket.connect("inproc://nobody-\(dontWait)")
        _ = try socket.send(Message("one"), dontWait: true)
        let error = try #require(throws: ZMQError.self) { try socket.send(Message("two"), dontWait: dontWait) }
        #expect(error.code == .wrongState)
        #expect(error.name == "EFSM")
    }

    @Test("libzmq's own and POSIX errno values have symbolic names")
    func names() {
        #expect(ZMQError.symbolicName(of: ETERM) == "ETERM")
        #expect(ZMQError.symbolicName(of: EHOSTUNREACH) == "EHOSTUNREACH")
        #expect(ZMQError.symbolicName(of: EAGAIN) == "EAGAIN")
        #expect(ZMQError.symbolicName(of: EPROTO) == "EPROTO")
        #expect(ZMQError.symbolicName(of: 99_999) == "errno 99999")
        #expect(ZMQError(errno: ETERM, operation: "x").code == .terminated)
    }
}
