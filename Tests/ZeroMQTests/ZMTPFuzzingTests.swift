import Testing
@_spi(Fuzzing) import ZeroMQ

/// The ZMTP fuzz target's harness (`Fuzz/`, `scripts/fuzz zmtp`) is not blind: its seeds reach
/// every part of a session, and what it checks holds for them.
@Suite("ZMTP fuzzing harness")
struct ZMTPFuzzingTests {
    @Test(arguments: ZMTPFuzzing.socketTypes, [UInt8(0), 1])
    func aWellBehavedPeerGetsThroughTheHandshakeToMessages(_ type: SocketType, minor: UInt8) {
        let bytes = ZMTPFuzzing.validPeerBytes(for: type, minor: minor)
        for cuts in [[], [1, 10, 63, 64, 65, 100], Array(stride(from: 1, to: bytes.count, by: 7))] {
            let outcome = ZMTPFuzzing.session(socketType: type, maxMessageBytes: 1 << 20, bytes: bytes, cuts: cuts)
            #expect(outcome.isReady && outcome.refusal == nil, "\(type.name), ZMTP 3.\(minor), cut at \(cuts): \(outcome)")
            let subscribes = type == .pub || type == .xpub
            // The peer sent two messages; a subscriber's subscription is its own event for a
            // publisher (a 3.0 peer's is a message that a publisher reads as a subscription).
            #expect(outcome.messages == 2, "\(type.name): \(outcome)")
            #expect(outcome.subscriptions == (subscribes ? 1 : 0), "\(type.name): \(outcome)")
        }
    }

    @Test func aFrameOverTheLimitEndsTheSession() {
        let bytes = ZMTPFuzzing.validPeerBytes(for: .dealer)
        let outcome = ZMTPFuzzing.session(socketType: .dealer, maxMessageBytes: 64, bytes: bytes, cuts: [])
        #expect(outcome.isReady && outcome.messages == 0 && outcome.refusal?.kind == .tooLarge, "\(outcome)")
    }

    @Test func greetingsAndCommandsSurviveTheirRoundTrips() {
        ZMTPFuzzing.greeting(ZMTPFuzzing.validGreeting)
        for command in ZMTPFuzzing.validCommands { ZMTPFuzzing.command(command) }
        // Bytes that are not a greeting or a command are refused without a trap.
        ZMTPFuzzing.greeting(Array(repeating: 0xFF, count: 64))
        ZMTPFuzzing.command([200, 1, 2])
    }
}
