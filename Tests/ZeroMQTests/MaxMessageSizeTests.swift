import Testing
import ZeroMQ

@Suite("MAXMSGSIZE")
struct MaxMessageSizeTests {
    @Test("an oversize message disconnects its sender while a well-behaved peer keeps being served")
    func oversizeDisconnects() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { socket in
                try socket.setOption(.maxMessageSize, 1024)
                return try socket.bind(anyLoopbackPort)
            }
            let monitor = try await router.monitor(events: [.accepted, .disconnected])
            let good = try await loop.open(.dealer) { socket in
                try socket.setOption(.routingID, Array("good".utf8))
                try socket.connect(endpoint)
            }
            let bad = try await loop.open(.dealer) { socket in
                try socket.setOption(.routingID, Array("bad".utf8))
                try socket.setOption(.reconnectInterval, .seconds(60))
                try socket.connect(endpoint)
            }

            try await good.send(["before", Frame(pattern(count: 1000, seed: 1))])
            let before = try await receive(1, from: router)[0]
            #expect(before[0].string == "good" && before[1].string == "before")

            try await bad.send([Frame(pattern(count: 4096, seed: 2))])
            let disconnected = try await firstEvent(in: monitor) { event in event.kind == .disconnected }
            #expect(disconnected?.endpoint.hasPrefix("tcp://127.0.0.1:") == true)

            try await good.send(["after"])
            let after = try await receive(1, from: router)[0]
            #expect(after == ["good", "after"])
            try await router.send(["good", "still served"])
            #expect(try await receive(1, from: good) == [["still served"]])
            #expect(router.statistics.received == 2)
        }
    }
}
