import Testing
import ZeroMQ

@Suite("CURVE and ZAP", .enabled(if: ZeroMQLibrary.hasCurve))
struct CurveTests {
    let server: CurveKeyPair
    let allowed: CurveKeyPair
    let stranger: CurveKeyPair

    init() throws {
        server = try CurveKeyPair.generate()
        allowed = try CurveKeyPair.generate()
        stranger = try CurveKeyPair.generate()
    }

    /// Opens a CURVE ROUTER server; returns it with its endpoint.
    func openServer(_ loop: IOLoop, zapDomain: String = "flowkit") async throws -> (AsyncSocket, String) {
        let options = CurveServerOptions(keyPair: server, zapDomain: zapDomain)
        return try await loop.open(.router) { socket in
            try socket.configureCurveServer(options)
            return try socket.bind(anyLoopbackPort)
        }
    }

    func openClient(_ loop: IOLoop, keys: CurveKeyPair, name: String, endpoint: String) async throws -> AsyncSocket {
        let options = CurveClientOptions(keyPair: keys, serverPublicKey: server.publicKey)
        return try await loop.open(.dealer) { socket in
            try socket.configureCurveClient(options)
            try socket.setOption(.routingID, Array(name.utf8))
            try socket.connect(endpoint)
        }
    }

    @Test("an allowed client talks; an unknown key is refused, nothing is delivered, the monitor reports auth failure")
    func allowList() async throws {
        try await withLoop { _, loop in
            let zap = try await ZAPHandler.start(on: loop, allowing: [allowed.publicKey], logger: testLogger)
            let (router, endpoint) = try await openServer(loop)
            let monitor = try await router.monitor(events: .handshakes)

            let friend = try await openClient(loop, keys: allowed, name: "friend", endpoint: endpoint)
            try await friend.send(["hello"])
            #expect(try await receive(1, from: router) == [["friend", "hello"]])
            try await router.send(["friend", "welcome"])
            #expect(try await receive(1, from: friend) == [["welcome"]])

            let intruder = try await openClient(loop, keys: stranger, name: "intruder", endpoint: endpoint)
            try await intruder.send(["let me in"])
            let failure = try await firstEvent(in: monitor) { event in event.isHandshakeFailure }
            #expect(failure?.kind == .handshakeFailedAuth)
            #expect(failure?.value == 400)
            #expect(zap.statistics.refused >= 1)
            #expect(zap.statistics.accepted == 1)

            // Prove nothing from the intruder arrived: the friend's next message is next.
            try await friend.send(["second"])
            #expect(try await receive(1, from: router) == [["friend", "second"]])
            #expect(router.statistics.received == 2)
        }
    }

    @Test("a restricted ZAP domain admits only its own keys; the others admit the general allow-list")
    func restrictedDomain() async throws {
        try await withLoop { _, loop in
            // `allowed` stands for a node, `stranger` for a client: both may use the open socket,
            // only the node the restricted one.
            let zap = try await ZAPHandler.start(
                on: loop, allowing: [allowed.publicKey, stranger.publicKey], restricting: ["nodes": [allowed.publicKey]], logger: testLogger
            )
            let (restricted, restrictedEndpoint) = try await openServer(loop, zapDomain: "nodes")
            let (open, openEndpoint) = try await openServer(loop)
            let monitor = try await restricted.monitor(events: .handshakes)

            let client = try await openClient(loop, keys: stranger, name: "client", endpoint: openEndpoint)
            try await client.send(["on the open socket"])
            #expect(try await receive(1, from: open) == [["client", "on the open socket"]])

            let clientAsNode = try await openClient(loop, keys: stranger, name: "client", endpoint: restrictedEndpoint)
            try await clientAsNode.send(["as a node"])
            let failure = try await firstEvent(in: monitor) { event in event.isHandshakeFailure }
            #expect(failure?.kind == .handshakeFailedAuth)

            let node = try await openClient(loop, keys: allowed, name: "node", endpoint: restrictedEndpoint)
            try await node.send(["hello"])
            #expect(try await receive(1, from: restricted) == [["node", "hello"]])
            #expect(restricted.statistics.received == 1, "nothing of the client arrived")
            #expect(zap.statistics.refused >= 1)
        }
    }

    @Test("without a ZAP handler libzmq admits any client that knows the server key")
    func noHandlerAdmitsAnyone() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await openServer(loop)
            let intruder = try await openClient(loop, keys: stranger, name: "intruder", endpoint: endpoint)
            try await intruder.send(["let me in"])
            #expect(try await receive(1, from: router) == [["intruder", "let me in"]])
        }
    }

    @Test("the allow-list changes at runtime (key rolling)")
    func keyRolling() async throws {
        try await withLoop { _, loop in
            let zap = try await ZAPHandler.start(on: loop, allowing: [allowed.publicKey], logger: testLogger)
            let (router, endpoint) = try await openServer(loop)
            let monitor = try await router.monitor(events: .handshakes)

            let newcomer = try await openClient(loop, keys: stranger, name: "newcomer", endpoint: endpoint)
            try await newcomer.send(["first try"])
            _ = try await firstEvent(in: monitor) { event in event.kind == .handshakeFailedAuth }
            #expect(router.statistics.received == 0)

            zap.setAllowedClientKeys([stranger.publicKey])
            #expect(zap.allowedClientKeys == [stranger.publicKey])
            let admitted = try await openClient(loop, keys: stranger, name: "admitted", endpoint: endpoint)
            try await admitted.send(["second try"])
            let got = try await receive(1, from: router)
            #expect(got == [["admitted", "second try"]])

            zap.revoke(stranger.publicKey)
            let refusedBefore = zap.statistics.refused
            let again = try await openClient(loop, keys: stranger, name: "again", endpoint: endpoint)
            try await again.send(["third try"])
            // Older refusals may still be buffered in the monitor: wait for one that comes
            // after the handler has counted a new refusal (it answers before libzmq reports).
            let refusal = try await firstEvent(in: monitor) { event in
                event.kind == .handshakeFailedAuth && zap.statistics.refused > refusedBefore
            }
            #expect(refusal != nil)
            #expect(zap.statistics.refused > refusedBefore)
        }
    }

    @Test("a client with the wrong server key never completes the handshake")
    func wrongServerKey() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await openServer(loop)
            let monitor = try await router.monitor(events: .handshakes)
            let impostorServer = try CurveKeyPair.generate()
            let options = CurveClientOptions(keyPair: allowed, serverPublicKey: impostorServer.publicKey)
            let client = try await loop.open(.dealer) { socket in
                try socket.configureCurveClient(options)
                try socket.connect(endpoint)
            }
            try await client.send(["hello?"])
            let failure = try await firstEvent(in: monitor) { event in event.isHandshakeFailure }
            #expect(failure != nil)
            #expect(router.statistics.received == 0)
        }
    }
}
