/// One ZMTP 3.1 connection with the NULL mechanism, without its I/O: bytes from the peer go in
/// (``append(_:)``), events come out (``nextEvent()``), and what this side sends collects in an
/// outbound buffer the owner writes to the socket (``withOutbound(_:)``).
///
/// Keeping the protocol apart from the socket lets one thread own both, with no hand-off between
/// an I/O thread and the application (libzmq's design), and lets tests feed it any bytes.
///
/// The session speaks for one peer of one socket; the socket above it (a ROUTER's routing ids,
/// a PUB's subscriptions) decides what to do with the events. It sends its greeting and READY
/// at once, accepts ZMTP 3.0 and 3.1 peers, answers PING with PONG, and turns subscriptions,
/// whether sent as SUBSCRIBE/CANCEL commands (3.1) or as `0x01`/`0x00`-prefixed messages (3.0),
/// into events for a PUB or XPUB.
struct ZMTPSession {
    struct Options: Sendable {
        /// This side's socket type, announced in READY and checked against the peer's.
        var socketType: SocketType
        /// This side's routing id, announced for DEALER, ROUTER and REQ (may be empty).
        var identity: [UInt8] = []
        /// The largest frame accepted (data or command); `nil` for no limit. libzmq's
        /// `ZMQ_MAXMSGSIZE` also applies to each frame, not to a message's sum.
        var maxMessageBytes: Int?

        init(socketType: SocketType, identity: [UInt8] = [], maxMessageBytes: Int? = nil) {
            self.socketType = socketType
            self.identity = identity
            self.maxMessageBytes = maxMessageBytes
        }
    }

    enum Event: Hashable, Sendable {
        /// The handshake is done: the peer's type and routing id (empty if it sent none).
        case ready(peerType: SocketType, identity: [UInt8])
        case message(Message)
        /// A subscriber asks for a prefix (seen only by PUB and XPUB sessions).
        case subscribe(prefix: [UInt8])
        case cancel(prefix: [UInt8])
    }

    enum Phase: Hashable, Sendable {
        case greeting, handshake, ready
    }

    let options: Options
    private(set) var phase = Phase.greeting
    /// The peer's greeting, once read (its minor version says how to send subscriptions).
    private(set) var peerGreeting: ZMTPGreeting?
    private(set) var peerMetadata = ZMTPMetadata()

    private var inbound = ByteQueue()
    private var outbound = ByteQueue()
    /// Frames of a message whose last frame has not arrived yet.
    private var partialFrames: [Frame] = []
    /// What the owner asked to send before the handshake ended.
    private var early: [Outgoing] = []
    /// Where each queued message ends, in bytes ever encoded, to count ``queuedMessages``.
    private var messageEnds: [Int] = []
    private var messageEndsHead = 0
    private var encodedBytes = 0
    private var writtenBytes = 0

    private enum Outgoing {
        case message(Message)
        case subscription(prefix: [UInt8], subscribe: Bool)
    }

    init(_ options: Options) {
        self.options = options
        outbound.append(contentsOf: ZMTPGreeting().encoded)
        encodedBytes = ZMTPGreeting.size
        var metadata = ZMTPMetadata([("Socket-Type", Array(options.socketType.name.utf8))])
        if options.socketType.sendsIdentity { metadata.properties.append(.init(name: "Identity", value: options.identity)) }
        encodeFrame(ZMTPCommand.ready(metadata).body[...], more: false, command: true)
    }

    // MARK: Bytes in

    /// Adds bytes read from the peer; ``nextEvent()`` then reads them.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        inbound.append(bytes)
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// The next thing the peer said, or `nil` when more bytes are needed.
    /// - Throws: ``ZMTPError`` when the peer broke the protocol or refused; the connection is
    ///   then over (close it).
    mutating func nextEvent() throws(ZMTPError) -> Event? {
        while true {
            switch phase {
            case .greeting:
                guard inbound.count >= ZMTPGreeting.signatureSize else { return nil }
                let signature = inbound[0..<ZMTPGreeting.signatureSize]
                guard signature.first == 0xFF, signature.last! & 1 == 1 else {
                    throw ZMTPError(.notZMTP, "the peer's first bytes are not a ZMTP greeting")
                }
                guard inbound.count >= ZMTPGreeting.size else { return nil }
                let greeting = try ZMTPGreeting(parsing: inbound[0..<ZMTPGreeting.size])
                inbound.consume(ZMTPGreeting.size)
                guard greeting.mechanism == "NULL" else {
                    throw ZMTPError(.mechanismMismatch, "the peer uses the \(greeting.mechanism) mechanism; this side uses NULL")
                }
                peerGreeting = greeting
                phase = .handshake
            case .handshake:
                guard let frame = try nextFrame() else { return nil }
                guard frame.command else {
                    throw ZMTPError(.malformed, "the peer sent a message before its READY")
                }
                switch try ZMTPCommand(parsing: frame.body) {
                case .ready(let metadata):
                    return try finishHandshake(metadata)
                case .error(let reason):
                    throw ZMTPError(.rejectedByPeer, "the peer refused the handshake: \(reason)")
                case let other:
                    throw ZMTPError(.malformed, "the peer sent \(other.name) before its READY")
                }
            case .ready:
                guard let frame = try nextFrame() else { return nil }
                if frame.command {
                    if let event = try handle(try ZMTPCommand(parsing: frame.body)) { return event }
                    continue
                }
                partialFrames.append(Frame(Array(frame.body)))
                if frame.more { continue }
                let message = Message(frames: partialFrames)
                partialFrames.removeAll(keepingCapacity: true)
                if let event = subscription(in: message) { return event }
                return .message(message)
            }
        }
    }

    private mutating func finishHandshake(_ metadata: ZMTPMetadata) throws(ZMTPError) -> Event {
        guard let typeName = metadata["Socket-Type"] else {
            throw ZMTPError(.malformed, "the peer's READY has no Socket-Type")
        }
        guard let peerType = SocketType(zmtpName: typeName), options.socketType.compatiblePeers.contains(peerType) else {
            let name = String(decoding: typeName, as: UTF8.self)
            throw ZMTPError(.incompatibleSocketType, "a \(name) peer cannot talk to a \(options.socketType.name) socket")
        }
        peerMetadata = metadata
        phase = .ready
        for item in early {
            switch item {
            case .message(let message): encode(message)
            case .subscription(let prefix, let subscribe): encodeSubscription(prefix, subscribe: subscribe)
            }
        }
        early.removeAll()
        return .ready(peerType: peerType, identity: metadata["Identity"] ?? [])
    }

    /// Answers what needs answering; returns the events the socket above must see.
    private mutating func handle(_ command: ZMTPCommand) throws(ZMTPError) -> Event? {
        switch command {
        case .ping(_, let context):
            encodeFrame(ZMTPCommand.pong(context: context).body[...], more: false, command: true)
            return nil
        case .subscribe(let prefix):
            return acceptsSubscriptions ? .subscribe(prefix: prefix) : nil
        case .cancel(let prefix):
            return acceptsSubscriptions ? .cancel(prefix: prefix) : nil
        case .error(let reason):
            throw ZMTPError(.rejectedByPeer, "the peer closed the connection: \(reason)")
        case .ready:
            throw ZMTPError(.malformed, "the peer sent a second READY")
        case .pong, .unknown:
            return nil
        }
    }

    private var acceptsSubscriptions: Bool { options.socketType == .pub || options.socketType == .xpub }

    /// A ZMTP 3.0 subscription: one frame, `0x01` (subscribe) or `0x00` (cancel) and the prefix.
    private func subscription(in message: Message) -> Event? {
        guard acceptsSubscriptions, message.count == 1, let flag = message[0].bytesView.first, flag <= 1 else { return nil }
        let prefix = Array(message[0].bytesView.dropFirst())
        return flag == 1 ? .subscribe(prefix: prefix) : .cancel(prefix: prefix)
    }

    private struct RawFrame {
        var more: Bool
        var command: Bool
        var body: ArraySlice<UInt8>
    }

    /// The next whole frame in the inbound buffer, or `nil` if it has not all arrived.
    private mutating func nextFrame() throws(ZMTPError) -> RawFrame? {
        guard inbound.count >= 2 else { return nil }
        let flags = inbound[0]
        guard flags & 0xF8 == 0 else {
            throw ZMTPError(.malformed, "a frame with reserved flag bits set (0x\(String(flags, radix: 16)))")
        }
        let more = flags & 0x01 != 0, long = flags & 0x02 != 0, command = flags & 0x04 != 0
        if command, more {
            throw ZMTPError(.malformed, "a command frame marked MORE")
        }
        let headerSize = long ? 9 : 2
        guard inbound.count >= headerSize else { return nil }
        var size: UInt64 = 0
        if long {
            for byte in inbound[1..<9] { size = size << 8 | UInt64(byte) }
        } else {
            size = UInt64(inbound[1])
        }
        if let limit = options.maxMessageBytes, size > UInt64(max(0, limit)) {
            throw ZMTPError(.tooLarge, "a frame of \(size) bytes is over the \(limit)-byte limit")
        }
        guard UInt64(inbound.count - headerSize) >= size else { return nil }
        let body = inbound[headerSize..<(headerSize + Int(size))]
        inbound.consume(headerSize + Int(size))
        return RawFrame(more: more, command: command, body: body)
    }

    // MARK: Bytes out

    /// Queues a message (held until the handshake ends).
    mutating func send(_ message: Message) {
        guard phase == .ready else {
            early.append(.message(message))
            return
        }
        encode(message)
    }

    /// Asks a PUB or XPUB peer for messages starting with `prefix` (a SUB or XSUB session), or
    /// withdraws it: a SUBSCRIBE or CANCEL command to a 3.1 peer, a prefixed message to a 3.0 one.
    mutating func subscribe(_ prefix: [UInt8], _ subscribe: Bool = true) {
        guard phase == .ready else {
            early.append(.subscription(prefix: prefix, subscribe: subscribe))
            return
        }
        encodeSubscription(prefix, subscribe: subscribe)
    }

    /// Queues a heartbeat; the peer answers with PONG.
    /// - Parameter ttl: How long the peer may wait for traffic before dropping the connection.
    mutating func ping(ttl: Duration) {
        let tenths = UInt16(clamping: ttl.components.seconds * 10 + ttl.components.attoseconds / 100_000_000_000_000_000)
        encodeFrame(ZMTPCommand.ping(ttl: tenths, context: []).body[...], more: false, command: true)
    }

    /// Whether bytes from the peer wait to be read by ``nextEvent()``.
    var hasPendingInput: Bool { !inbound.isEmpty }

    /// Whether bytes wait to be written.
    var hasOutbound: Bool { !outbound.isEmpty }

    /// The number of bytes waiting to be written.
    var outboundCount: Int { outbound.count }

    /// Messages sent and not wholly written yet (those held for the handshake included), for a
    /// high-water mark.
    var queuedMessages: Int { messageEnds.count - messageEndsHead + early.count }

    /// Hands the bytes waiting to be written to `write`, which returns how many it wrote.
    mutating func withOutbound(_ write: (UnsafeRawBufferPointer) -> Int) {
        guard hasOutbound else { return }
        let written = max(0, outbound.withUnsafeBytes(write))
        outbound.consume(written)
        writtenBytes += written
        while messageEndsHead < messageEnds.count, messageEnds[messageEndsHead] <= writtenBytes { messageEndsHead += 1 }
        if messageEndsHead == messageEnds.count {
            messageEnds.removeAll(keepingCapacity: true)
            messageEndsHead = 0
        }
    }

    private mutating func encode(_ message: Message) {
        let last = message.count - 1
        for (index, frame) in message.enumerated() {
            encodeFrame(frame.bytesView, more: index < last, command: false)
        }
        messageEnds.append(encodedBytes)
    }

    private mutating func encodeSubscription(_ prefix: [UInt8], subscribe: Bool) {
        if let minor = peerGreeting?.minor, minor >= 1 {
            let command = subscribe ? ZMTPCommand.subscribe(prefix: prefix) : .cancel(prefix: prefix)
            encodeFrame(command.body[...], more: false, command: true)
        } else {
            encodeFrame(([subscribe ? 1 : 0] + prefix)[...], more: false, command: false)
        }
    }

    private mutating func encodeFrame(_ body: ArraySlice<UInt8>, more: Bool, command: Bool) {
        let long = body.count > 255
        outbound.append((more ? 0x01 : 0) | (long ? 0x02 : 0) | (command ? 0x04 : 0))
        if long {
            let size = UInt64(body.count)
            for shift in stride(from: 56, through: 0, by: -8) { outbound.append(UInt8(truncatingIfNeeded: size >> UInt64(shift))) }
        } else {
            outbound.append(UInt8(body.count))
        }
        outbound.append(contentsOf: body)
        encodedBytes += (long ? 9 : 2) + body.count
    }
}
