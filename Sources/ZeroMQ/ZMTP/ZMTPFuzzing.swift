/// What the libFuzzer target in `Fuzz/` drives: the ZMTP engine's parsers, which read every byte a
/// peer sends before anything else does, fed any bytes, with the checks a finding breaks. A trap
/// (a failed check, an out-of-bounds index, an overflow) or a sanitizer report is a finding.
///
/// Not an API for applications: it exists so the fuzz package can reach the engine's internal
/// types without `@testable` (which a release build of the fuzz target would not allow).
@_spi(Fuzzing) public enum ZMTPFuzzing {
    /// The socket types a session can be, in a fixed order (the fuzz input picks one by index).
    public static let socketTypes: [SocketType] = [.router, .dealer, .xpub, .pub, .sub, .xsub, .req, .rep, .push, .pull, .pair]

    /// Feeds `bytes` to a session of `socketType`, in pieces that end at `cuts` (as reads from a
    /// socket would come), reading every event after each piece and writing what the session
    /// answers, until the session refuses the peer or the bytes run out.
    ///
    /// Checks: the first event is the handshake's, once, naming a compatible peer; no frame of a
    /// message is over the limit; only a PUB or XPUB session reports subscriptions; once the
    /// session refuses, the connection is over (nothing more is read).
    ///
    /// - Returns: What the session made of the bytes.
    @discardableResult
    public static func session(socketType: SocketType, maxMessageBytes: Int?, bytes: [UInt8], cuts: [Int]) -> SessionOutcome {
        var session = ZMTPSession(.init(socketType: socketType, identity: Array("fuzz".utf8), maxMessageBytes: maxMessageBytes))
        var outcome = SessionOutcome()
        var start = 0
        for end in cuts.map({ min(max($0, 0), bytes.count) }).sorted() + [bytes.count] where end >= start {
            session.append(Array(bytes[start..<end]))
            start = end
            while true {
                let event: ZMTPSession.Event?
                do {
                    event = try session.nextEvent()
                } catch {
                    outcome.refusal = error  // the peer broke the protocol: the connection is over
                    return outcome
                }
                guard let event else { break }
                switch event {
                case .ready(let peerType, _):
                    precondition(!outcome.isReady, "a second handshake event")
                    precondition(socketType.compatiblePeers.contains(peerType), "a \(peerType.name) peer accepted by a \(socketType.name) session")
                    precondition(session.phase == .ready)
                    outcome.isReady = true
                    // What the socket above does once a peer is ready: send to it.
                    session.send(Message(parts: [Array("reply".utf8)]))
                case .message(let message):
                    outcome.messages += 1
                    precondition(outcome.isReady, "a message before the handshake")
                    precondition(message.count >= 1, "a message without frames")
                    if let maxMessageBytes {
                        for frame in message.frames { precondition(frame.bytes.count <= maxMessageBytes, "a frame over the limit") }
                    }
                case .subscribe, .cancel:
                    outcome.subscriptions += 1
                    precondition(outcome.isReady, "a subscription before the handshake")
                    precondition(socketType == .pub || socketType == .xpub, "a subscription on a \(socketType.name) session")
                }
            }
            session.withOutbound { $0.count }
        }
        return outcome
    }

    /// What a session made of a peer's bytes.
    public struct SessionOutcome: Sendable {
        public var isReady = false
        public var messages = 0
        public var subscriptions = 0
        /// Why the session refused the peer, if it did.
        public var refusal: ZMTPError?
    }

    /// Parses `bytes` as a greeting; one that parses with a plain mechanism name re-encodes to a
    /// greeting that parses the same.
    public static func greeting(_ bytes: [UInt8]) {
        guard let greeting = try? ZMTPGreeting(parsing: bytes) else { return }
        guard greeting.mechanism.utf8.allSatisfy({ $0 > 0 && $0 < 0x80 }) else { return }
        let again = try? ZMTPGreeting(parsing: greeting.encoded)
        precondition(again == greeting, "the greeting \(greeting) does not survive a round trip: \(String(describing: again))")
    }

    /// Parses `bytes` as a command frame's body; a known command re-encodes to one that parses
    /// the same (an ERROR's reason only when it fits the 255 bytes its encoding allows).
    public static func command(_ bytes: [UInt8]) {
        guard let command = try? ZMTPCommand(parsing: bytes[...]) else { return }
        switch command {
        case .unknown: return
        case .error(let reason) where reason.utf8.count > 255: return
        case .ready(let metadata) where metadata.properties.contains(where: { $0.name.utf8.count > 255 }): return
        default: break
        }
        let again = try? ZMTPCommand(parsing: command.body[...])
        precondition(again == command, "the command \(command) does not survive a round trip: \(String(describing: again))")
    }

    /// What a well-behaved peer of a `socketType` session sends: its greeting and READY, then
    /// messages of short and long frames, subscriptions and a PING. The fuzz target's seeds.
    public static func validPeerBytes(for socketType: SocketType, minor: UInt8 = 1) -> [UInt8] {
        guard let peerType = socketType.compatiblePeers.first else { return [] }
        var peer = ZMTPSession(.init(socketType: peerType, identity: Array("peer".utf8)))
        // The peer's handshake completes against this side's greeting and READY.
        var local = ZMTPSession(.init(socketType: socketType))
        local.withOutbound { bytes in
            peer.append(bytes)
            return bytes.count
        }
        _ = try? peer.nextEvent()
        peer.send(Message(parts: [Array("a".utf8), Array(repeating: 0x42, count: 300)]))
        peer.send(Message(parts: [[]]))
        if peerType == .sub || peerType == .xsub { peer.subscribe(Array("topic".utf8)) }
        peer.ping(ttl: .seconds(3))
        var bytes: [UInt8] = []
        peer.withOutbound { written in
            bytes = Array(written)
            return written.count
        }
        if minor == 0, bytes.count > 11 { bytes[11] = 0 }
        return bytes
    }

    /// Command bodies of every kind, for seeds.
    public static var validCommands: [[UInt8]] {
        [
            ZMTPCommand.ready(ZMTPMetadata([("Socket-Type", Array("DEALER".utf8)), ("Identity", [1, 2])])).body,
            ZMTPCommand.error(reason: "no").body,
            ZMTPCommand.subscribe(prefix: Array("t".utf8)).body,
            ZMTPCommand.cancel(prefix: Array("t".utf8)).body,
            ZMTPCommand.ping(ttl: 30, context: [9]).body,
            ZMTPCommand.pong(context: [9]).body,
        ]
    }

    /// A valid greeting, for seeds.
    public static var validGreeting: [UInt8] { ZMTPGreeting().encoded }
}
