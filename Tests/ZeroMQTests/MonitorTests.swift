import Testing
import ZeroMQ

@Suite("Socket monitor")
struct MonitorTests {
    @Test("connect, accept and handshake events are decoded; closing the socket ends the stream")
    func lifecycle() async throws {
        try await withLoop { _, loop in
            let (router, endpoint) = try await loop.open(.router) { try $0.bind(anyLoopbackPort) }
            let serverEvents = try await router.monitor()
            let dealer = try await loop.open(.dealer)
            let clientEvents = try await dealer.monitor(events: [.connected, .handshakeSucceeded, .disconnected])
            try await dealer.perform { try $0.connect(endpoint) }

            let accepted = try await firstEvent(in: serverEvents) { $0.kind == .accepted }
            #expect(accepted?.endpoint == endpoint)
            let handshake = try await firstEvent(in: serverEvents) { $0.kind == .handshakeSucceeded }
            #expect(handshake != nil)
            let connected = try await firstEvent(in: clientEvents) { $0.kind == .connected }
            #expect(connected?.endpoint == endpoint)

            await dealer.close()
            let disconnected = try await firstEvent(in: serverEvents) { $0.kind == .disconnected }
            #expect(disconnected != nil)
            // The dealer's monitor ends once its socket is closed.
            let end = try await firstEvent(in: clientEvents) { _ in false }
            #expect(end == nil)
        }
    }

    @Test("the two-frame 4.x event format decodes", arguments: [
        (UInt16(0x4000), UInt32(400), MonitorEvent.Kind.handshakeFailedAuth),
        (UInt16(0x0020), UInt32(12), .accepted),
        (UInt16(0x0200), UInt32(5), .disconnected),
        (UInt16(0x8000), UInt32(0), .unknown),
    ])
    func decode(event: UInt16, value: UInt32, kind: MonitorEvent.Kind) throws {
        var header = withUnsafeBytes(of: event) { Array($0) }
        header += withUnsafeBytes(of: value) { Array($0) }
        let decoded = try #require(MonitorEvent(decoding: [Frame(header), "tcp://127.0.0.1:9"]))
        #expect(decoded.kind == kind)
        #expect(decoded.value == value)
        #expect(decoded.endpoint == "tcp://127.0.0.1:9")
        #expect(MonitorEvent(decoding: ["short"]) == nil)
    }
}
