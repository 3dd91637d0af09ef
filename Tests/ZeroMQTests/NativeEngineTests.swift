import Glibc
import Synchronization
import Testing
@testable import ZeroMQ

/// Sockets carried by FlowKit's ZMTP engine, through the same ``AsyncSocket`` API, talking to
/// each other and to libzmq's sockets over loopback TCP.
@Suite("ZMTP engine sockets")
struct NativeEngineTests {
    static let pairs: [(SocketEngine, SocketEngine)] = [(.native, .native), (.native, .libzmq), (.libzmq, .native)]

    @Test("ROUTER and DEALERs: routing ids, replies and multipart messages, across engines", arguments: pairs)
    func routerAndDealers(routerEngine: SocketEngine, dealerEngine: SocketEngine) async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router, engine: routerEngine) { socket in
                try socket.bind("tcp://127.0.0.1:*")
            }
            var dealers: [AsyncSocket] = []
            for name in ["alice", "bob"] {
                let (dealer, _) = try await loop.open(.dealer, engine: dealerEngine) { socket in
                    try socket.setOption(.routingID, Array(name.utf8))
                    try socket.connect(endpoint)
                }
                dealers.append(dealer)
            }
            let large = Frame(pattern(count: 200_000, seed: 3))
            try await dealers[0].send(["hello from alice", large])
            try await dealers[1].send(["hello from bob"])
            let requests = try await receive(2, from: router)
            let byIdentity = Dictionary(uniqueKeysWithValues: requests.map { ($0[0].string!, Array($0.frames.dropFirst())) })
            #expect(byIdentity == ["alice": ["hello from alice", large], "bob": ["hello from bob"]])
            for request in requests {
                try await router.send([request[0], Frame("reply to \(request[0].string!)")])
            }
            #expect(try await receive(1, from: dealers[0]) == [["reply to alice"]])
            #expect(try await receive(1, from: dealers[1]) == [["reply to bob"]])
        }
    }

    @Test("a DEALER without an identity gets a generated routing id; 10,000 messages keep their order", arguments: pairs)
    func orderAndGeneratedIdentity(routerEngine: SocketEngine, dealerEngine: SocketEngine) async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router, engine: routerEngine) { try $0.bind("tcp://127.0.0.1:*") }
            let (dealer, _) = try await loop.open(.dealer, engine: dealerEngine) { try $0.connect(endpoint) }
            let count = 10_000
            for index in 0..<count { try await dealer.send([Frame("\(index)")]) }
            let received = try await receive(count, from: router)
            #expect(received.map { $0[1].string! } == (0..<count).map { "\($0)" })
            #expect(Set(received.map { $0[0] }).count == 1)
            #expect(received[0][0].count == 5 && received[0][0].bytesView.first == 0)
            for message in received.prefix(100) { try await router.send(message) }
            #expect(try await receive(100, from: dealer).map { $0[0].string! } == (0..<100).map { "\($0)" })
        }
    }

    @Test("XPUB and SUB: subscription events once per topic, the prefix filter, and a cancel when the last subscriber leaves", arguments: pairs)
    func publishAndSubscribe(publisherEngine: SocketEngine, subscriberEngine: SocketEngine) async throws {
        try await withLoop { _, loop in
            let (xpub, endpoint) = try await loop.open(.xpub, engine: publisherEngine) { try $0.bind("tcp://127.0.0.1:*") }
            var subscribers: [AsyncSocket] = []
            for _ in 0..<2 {
                let (sub, _) = try await loop.open(.sub, engine: subscriberEngine) { socket in
                    try socket.subscribe("news.")
                    try socket.connect(endpoint)
                }
                subscribers.append(sub)
            }
            #expect(try await receive(1, from: xpub) == [Message([1] + Array("news.".utf8))])
            // XPUB reports a topic once, so the second subscription is known to have arrived only
            // when a probe reaches both subscribers.
            var ready = [false, false]
            let deadline = ContinuousClock.now + .seconds(10)
            while ready.contains(false) {
                try #require(ContinuousClock.now < deadline, "a probe reached both subscribers")
                try await xpub.send(["news.probe"])
                for index in 0..<2 where !ready[index] {
                    if try await receiveOrNil(from: subscribers[index]) != nil { ready[index] = true }
                }
            }
            try await xpub.send(["sport.1", "x"])
            try await xpub.send(["news.1", "y"])
            for sub in subscribers {
                var seen: [Message] = []
                while seen.last != ["news.1", "y"] { seen += try await receive(1, from: sub) }
                #expect(seen.allSatisfy { $0[0].string!.hasPrefix("news.") })
            }
            await subscribers[0].close()
            try await Task.sleep(for: .milliseconds(200))
            #expect(xpub.statistics.bufferedIncoming == 0, "one subscriber of two left: no cancel yet")
            await subscribers[1].close()
            #expect(try await receive(1, from: xpub) == [Message([0] + Array("news.".utf8))])
        }
    }

    /// A free port below the kernel's ephemeral range, for a socket that binds it only later: a port
    /// the OS chose (bind to 0, then close) could be handed to another test's `*` bind, or to an
    /// outgoing connection, in between. In CI a parallel test's ROUTER got one and this test's
    /// DEALER connected to it.
    static func portNoOneElseGets() throws -> UInt16 {
        var firstEphemeral = 32_768
        let descriptor = open("/proc/sys/net/ipv4/ip_local_port_range", O_RDONLY)
        if descriptor >= 0 {
            var bytes = [UInt8](repeating: 0, count: 64)
            let count = read(descriptor, &bytes, bytes.count)
            close(descriptor)
            let text = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
            if let low = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap({ Int($0) }) { firstEphemeral = low }
        }
        for _ in 0..<200 {
            let port = UInt16(Int.random(in: 10_000..<max(10_001, firstEphemeral)))
            guard let (probe, _) = try? TCPSocket.listen(host: "127.0.0.1", port: port) else { continue }
            close(probe)
            return port
        }
        throw ZMQError(.addressInUse, message: "no free port below \(firstEphemeral)", operation: "portNoOneElseGets")
    }

    @Test("a native DEALER sends before its ROUTER exists; the messages arrive once it binds")
    func dealerWaitsForItsPeer() async throws {
        try await withLoop { _, loop in
            let endpoint = "tcp://127.0.0.1:\(try Self.portNoOneElseGets())"
            let (dealer, _) = try await loop.open(.dealer, engine: .native) { socket in
                try socket.setOption(.reconnectInterval, .milliseconds(20))
                try socket.connect(endpoint)
            }
            try await dealer.send(["early"])
            try await Task.sleep(for: .milliseconds(100))
            let (router, _) = try await loop.open(.router, engine: .native) { try $0.bind(endpoint) }
            #expect(try await receive(1, from: router).map { $0[1] } == ["early"])
        }
    }

    @Test("a native ROUTER drops a message for an unknown peer and, when mandatory, reports EHOSTUNREACH")
    func unknownPeer() async throws {
        try await withLoop { _, loop in
            let dropped = Mutex<[ZMQError]>([])
            let configuration = AsyncSocket.Configuration(onUndeliverable: { _, error in dropped.withLock { $0.append(error) } })
            let (router, endpoint) = try await loop.open(.router, engine: .native, configuration: configuration) { socket in
                try socket.setOption(.routerMandatory, true)
                return try socket.bind("tcp://127.0.0.1:*")
            }
            let (dealer, _) = try await loop.open(.dealer, engine: .native) { socket in
                try socket.setOption(.routingID, Array("present".utf8))
                try socket.connect(endpoint)
            }
            try await dealer.send(["hi"])
            _ = try await receive(1, from: router)
            try await router.send(["ghost", "lost"])
            try await router.send(["present", "kept"])
            #expect(try await receive(1, from: dealer) == [["kept"]])
            #expect(router.statistics.undeliverable == 1)
            #expect(dropped.withLock { $0.map(\.code) } == [.hostUnreachable])
        }
    }

    @Test("a loopback connection does not pace (reno at both ends); one to another address keeps the system's choice")
    func loopbackCongestionControl() throws {
        func congestionControl(_ fd: Int32) -> String {
            var name = [CChar](repeating: 0, count: 32)
            var length = socklen_t(name.count)
            guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_CONGESTION, &name, &length) == 0 else { return "errno \(errno)" }
            return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        let (listener, port) = try TCPSocket.listen(host: "*", port: 0)
        defer { close(listener) }
        let fresh = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let systemDefault = congestionControl(fresh)
        close(fresh)

        let client = try TCPSocket.connect(host: "127.0.0.1", port: port)
        defer { close(client) }
        let served = try ZMTPInteropTests.accept(listener)
        defer { close(served) }
        #expect(congestionControl(client) == TCPSocket.loopbackCongestionControl)
        #expect(congestionControl(served) == TCPSocket.loopbackCongestionControl)

        // The machine's first IPv4 address that is not loopback, if it has one.
        var interfaces: UnsafeMutablePointer<ifaddrs>?
        try #require(getifaddrs(&interfaces) == 0)
        defer { freeifaddrs(interfaces) }
        var other: String?
        for entry in sequence(first: interfaces!, next: { $0.pointee.ifa_next }) {
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            let inet = UnsafeRawPointer(address).load(as: sockaddr_in.self)
            guard UInt32(bigEndian: inet.sin_addr.s_addr) >> 24 != 127 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var raw = inet.sin_addr
            inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
            other = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            break
        }
        let address = try #require(other, "this check needs an IPv4 address other than loopback")
        let remote = try TCPSocket.connect(host: address, port: port)
        defer { close(remote) }
        let servedRemote = try ZMTPInteropTests.accept(listener)
        defer { close(servedRemote) }
        #expect(congestionControl(remote) == systemDefault)
        #expect(congestionControl(servedRemote) == systemDefault)
    }

    @Test("a native DEALER whose peer stops reading keeps the rest queued past the high-water mark, and delivers it all in order")
    func dealerBackpressure() async throws {
        try await withLoop { _, loop in
            let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
            defer { close(listener) }
            let (dealer, _) = try await loop.open(.dealer, engine: .native) { socket in
                try socket.setOption(.sendHighWaterMark, 5)
                try socket.connect("tcp://127.0.0.1:\(port)")
            }
            // (A small receive buffer on the peer would stall loopback TCP in its silly-window
            // avoidance; enough messages to fill the kernel's buffers do the same job.)
            let peer = ZMTPStream(fileDescriptor: try ZMTPInteropTests.accept(listener), session: ZMTPSession(.init(socketType: .router)))
            #expect(try ZMTPInteropTests.nextEvent(peer) == .ready(peerType: .dealer, identity: []))
            // More than the kernel's buffers hold, fewer than the socket's queue (so no send waits).
            let count = 6_000
            let body = [UInt8](repeating: 9, count: 4_000)
            for index in 0..<count { try await dealer.send([Frame("\(index)"), Frame(body)]) }
            try await Task.sleep(for: .milliseconds(200))
            #expect(dealer.statistics.queuedOutgoing > 0, "the dealer holds what its peer cannot take")
            for index in 0..<count {
                let event = try ZMTPInteropTests.nextEvent(peer)
                guard case .message(let message) = event, message[0].string == "\(index)" else {
                    Issue.record("message \(index): \(event)")
                    return
                }
            }
            #expect(dealer.statistics.undeliverable == 0)
        }
    }

    @Test("a native DEALER drops a peer that stops answering heartbeats, or never greets, and dials again")
    func silentPeersAreDropped() async throws {
        try await withLoop { _, loop in
            let (listener, port) = try TCPSocket.listen(host: "127.0.0.1", port: 0)
            defer { close(listener) }
            let (dealer, _) = try await loop.open(.dealer, engine: .native) { socket in
                try socket.setOption(.heartbeatInterval, .milliseconds(50))
                try socket.setOption(.heartbeatTimeout, .milliseconds(200))
                try socket.setOption(.handshakeInterval, .milliseconds(300))
                try socket.setOption(.reconnectInterval, .milliseconds(20))
                try socket.connect("tcp://127.0.0.1:\(port)")
            }
            // First peer: shakes hands, then reads nothing more (the PINGs go unanswered).
            let first = ZMTPStream(fileDescriptor: try ZMTPInteropTests.accept(listener), session: ZMTPSession(.init(socketType: .router)))
            #expect(try ZMTPInteropTests.nextEvent(first) == .ready(peerType: .dealer, identity: []))
            let second = try ZMTPInteropTests.accept(listener)
            #expect(try !ZMTPInteropTests.serve(first, for: .milliseconds(500)), "the dealer closed the silent connection")
            // Second peer: never sends its greeting.
            defer { close(second) }
            let third = ZMTPStream(fileDescriptor: try ZMTPInteropTests.accept(listener), session: ZMTPSession(.init(socketType: .router)))
            #expect(try ZMTPInteropTests.nextEvent(third) == .ready(peerType: .dealer, identity: []))
            try await dealer.send(["after two redials"])
            #expect(try ZMTPInteropTests.nextEvent(third) == .message(["after two redials"]))
        }
    }

    @Test("what the engine does not do is refused by name: other transports, unknown options; an incompatible peer gets nowhere")
    func refusals() async throws {
        try await withLoop { _, loop in
            await #expect(throws: ZMQError.self) {
                _ = try await loop.open(.router, engine: .native) { try $0.bind("ipc:///tmp/flowkit-native") }
            }
            await #expect(throws: ZMQError.self) {
                _ = try await loop.open(.req, engine: .native) { try $0.connect("tcp://127.0.0.1:9") }
            }
            let error = await #expect(throws: ZMQError.self) {
                _ = try await loop.open(.router, engine: .native) { try $0.setOption(.xpubVerbose, true) }
            }
            #expect(error?.description.contains("ZMQ_XPUB_VERBOSE") == true)
            let (router, endpoint) = try await loop.open(.router, engine: .native) { try $0.bind("tcp://127.0.0.1:*") }
            // A SUB cannot talk to a ROUTER: the handshake fails and nothing reaches the router.
            let (sub, _) = try await loop.open(.sub, engine: .libzmq) { socket in
                try socket.subscribe("")
                try socket.connect(endpoint)
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(router.statistics.received == 0)
            _ = sub
        }
    }
}

/// One message if one arrives within `limit`, else `nil`.
func receiveOrNil(from socket: AsyncSocket, within limit: Duration = .milliseconds(100)) async throws -> Message? {
    try? await withTimeout(limit, "a message") { try await socket.receiveBatch(max: 1)[0] }
}
