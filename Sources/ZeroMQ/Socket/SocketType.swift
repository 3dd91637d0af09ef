import CZeroMQ

/// The ZeroMQ socket patterns this wrapper supports (libzmq 4.3 stable API).
public struct SocketType: Hashable, Sendable, CustomStringConvertible {
    /// The `ZMQ_*` constant passed to `zmq_socket`.
    public let rawValue: Int32
    /// The pattern name, e.g. `"ROUTER"`.
    public let name: String

    private init(_ rawValue: Int32, _ name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    /// Publisher: fans messages out to subscribers whose filters match; drops at HWM.
    public static let pub = SocketType(ZMQ_PUB, "PUB")
    /// Subscriber: receives the messages matching its `SUBSCRIBE` prefixes.
    public static let sub = SocketType(ZMQ_SUB, "SUB")
    /// Extended publisher: also receives subscription messages (`0x01`/`0x00` + topic).
    public static let xpub = SocketType(ZMQ_XPUB, "XPUB")
    /// Extended subscriber: subscribes by sending subscription messages.
    public static let xsub = SocketType(ZMQ_XSUB, "XSUB")
    /// Asynchronous request side: round-robins sends, fair-queues receives.
    public static let dealer = SocketType(ZMQ_DEALER, "DEALER")
    /// Asynchronous reply side: prefixes each received message with the peer's routing id.
    public static let router = SocketType(ZMQ_ROUTER, "ROUTER")
    /// Strict request/reply client: send, receive, send, ...
    public static let req = SocketType(ZMQ_REQ, "REQ")
    /// Strict request/reply server: receive, send, receive, ...
    public static let rep = SocketType(ZMQ_REP, "REP")
    /// Pipeline producer: round-robins to connected pullers.
    public static let push = SocketType(ZMQ_PUSH, "PUSH")
    /// Pipeline consumer: fair-queues from connected pushers.
    public static let pull = SocketType(ZMQ_PULL, "PULL")
    /// Exclusive pair: one peer, both directions.
    public static let pair = SocketType(ZMQ_PAIR, "PAIR")

    /// All supported types.
    public static let allCases: [SocketType] = [.pub, .sub, .xpub, .xsub, .dealer, .router, .req, .rep, .push, .pull, .pair]

    /// Whether the pattern can receive at all (PUB and PUSH cannot).
    public var canReceive: Bool { self != .pub && self != .push }

    /// Whether the pattern can send at all (SUB and PULL cannot).
    public var canSend: Bool { self != .sub && self != .pull }

    public var description: String { name }

    // Identity is the ZMQ_* constant alone (the name only describes it); comparing it is
    // an integer compare on hot paths.
    public static func == (lhs: SocketType, rhs: SocketType) -> Bool { lhs.rawValue == rhs.rawValue }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
}
