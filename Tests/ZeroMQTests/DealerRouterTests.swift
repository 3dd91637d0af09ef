import Synchronization
import Testing
import ZeroMQ

@Suite("DEALER/ROUTER")
struct DealerRouterTests {
    @Test("a dealer's ROUTING_ID reaches the router and the reply is routed back")
    func routingID() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { socket in
                try socket.setOption(.routerMandatory, true)
                return try socket.bind(anyLoopbackPort)
            }
            var dealers: [AsyncSocket] = []
            for name in ["alice", "bob"] {
                dealers.append(try await loop.open(.dealer) { socket in
                    try socket.setOption(.routingID, Array(name.utf8))
                    try socket.connect(endpoint)
                })
            }
            try await dealers[0].send(["hello from alice"])
            try await dealers[1].send(["hello from bob"])
            let requests = try await receive(2, from: router)
            let byIdentity = Dictionary(uniqueKeysWithValues: requests.map { ($0[0].string!, $0[1].string!) })
            #expect(byIdentity == ["alice": "hello from alice", "bob": "hello from bob"])
            for request in requests {
                try await router.send([request[0], Frame("reply to \(request[0].string!)")])
            }
            #expect(try await receive(1, from: dealers[0]) == [["reply to alice"]])
            #expect(try await receive(1, from: dealers[1]) == [["reply to bob"]])
        }
    }

    @Test("EHOSTUNREACH for a vanished peer drops that message, reports it and keeps serving; onSent sees only what libzmq accepted")
    func unreachablePeerDoesNotWedge() async throws {
        try await withLoop { _, loop in
            let dropped = Mutex<[ZMQError]>([])
            let sent = Mutex<[String]>([])
            let configuration = AsyncSocket.Configuration(
                onUndeliverable: { _, error in dropped.withLock { $0.append(error) } },
                onSent: { message in sent.withLock { $0.append(message.frames.map { $0.string ?? "?" }.joined(separator: "/")) } }
            )
            let (router, endpoint) = try await loop.open(.router, configuration: configuration) { socket in
                try socket.setOption(.routerMandatory, true)
                return try socket.bind(anyLoopbackPort)
            }
            let dealer = try await loop.open(.dealer) { socket in
                try socket.setOption(.routingID, Array("present".utf8))
                try socket.connect(endpoint)
            }
            try await dealer.send(["ready"])
            _ = try await receive(1, from: router)

            try await router.send(["ghost", "to nobody"])
            try await router.send(["present", "first"])
            try await router.send(["ghost", "again"])
            try await router.send(["present", "second"])
            #expect(try await receive(2, from: dealer) == [["first"], ["second"]])
            #expect(router.statistics.undeliverable == 2)
            let errors = dropped.withLock { $0 }
            #expect(errors.count == 2)
            #expect(errors.allSatisfy { $0.code == .hostUnreachable && $0.name == "EHOSTUNREACH" })
            #expect(sent.withLock { $0 } == ["present/first", "present/second"])
        }
    }

    @Test("perform runs synchronous socket calls on the I/O thread")
    func perform() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { try $0.bind(anyLoopbackPort) }
            let fromPerform = try await router.perform { try $0.lastEndpoint() }
            #expect(fromPerform == endpoint)
            try await router.perform { try $0.setOption(.sendHighWaterMark, 77) }
            #expect(try await router.perform { try $0.option(.sendHighWaterMark) } == 77)
            await router.close()
            await #expect(throws: ZMQError.self) { try await router.perform { _ in () } }
        }
    }
}
