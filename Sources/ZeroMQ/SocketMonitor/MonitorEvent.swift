import CZeroMQ

/// One event from a socket monitor (`zmq_socket_monitor`), decoded.
///
/// libzmq 4.x sends each event as two frames: 6 bytes (a 16-bit event number and a
/// 32-bit value, native byte order) and the endpoint the event concerns.
public struct MonitorEvent: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// A connect completed (value: the file descriptor).
        case connected
        /// A connect is in progress and will complete later.
        case connectDelayed
        /// A reconnect was scheduled (value: the interval in ms).
        case connectRetried
        /// A bind is accepting connections (value: the file descriptor).
        case listening
        /// A bind failed (value: `errno`).
        case bindFailed
        /// A connection was accepted on a bound endpoint (value: the file descriptor).
        case accepted
        /// Accepting a connection failed (value: `errno`).
        case acceptFailed
        /// A connection's socket was closed (value: the file descriptor).
        case closed
        /// Closing failed (value: `errno`).
        case closeFailed
        /// A session was broken: the peer went away, or was dropped (e.g. `MAXMSGSIZE`).
        case disconnected
        /// The monitor was stopped; no more events follow.
        case monitorStopped
        /// A handshake failed for a system reason (value: `errno`).
        case handshakeFailedNoDetail
        /// A ZMTP handshake (and authentication, if any) completed.
        case handshakeSucceeded
        /// A handshake failed on a protocol error (value: a `ZMQ_PROTOCOL_ERROR_*` code).
        case handshakeFailedProtocol
        /// Authentication was refused (value: the ZAP status code, e.g. 400).
        case handshakeFailedAuth
        /// An event number this wrapper does not know.
        case unknown

        init(rawEvent: UInt16) {
            switch Int32(rawEvent) {
            case ZMQ_EVENT_CONNECTED: self = .connected
            case ZMQ_EVENT_CONNECT_DELAYED: self = .connectDelayed
            case ZMQ_EVENT_CONNECT_RETRIED: self = .connectRetried
            case ZMQ_EVENT_LISTENING: self = .listening
            case ZMQ_EVENT_BIND_FAILED: self = .bindFailed
            case ZMQ_EVENT_ACCEPTED: self = .accepted
            case ZMQ_EVENT_ACCEPT_FAILED: self = .acceptFailed
            case ZMQ_EVENT_CLOSED: self = .closed
            case ZMQ_EVENT_CLOSE_FAILED: self = .closeFailed
            case ZMQ_EVENT_DISCONNECTED: self = .disconnected
            case ZMQ_EVENT_MONITOR_STOPPED: self = .monitorStopped
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: self = .handshakeFailedNoDetail
            case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: self = .handshakeSucceeded
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: self = .handshakeFailedProtocol
            case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: self = .handshakeFailedAuth
            default: self = .unknown
            }
        }
    }

    /// The decoded event kind.
    public let kind: Kind
    /// The raw `ZMQ_EVENT_*` number.
    public let rawEvent: UInt16
    /// The event value: a file descriptor, `errno`, interval, ZAP status or protocol code.
    public let value: UInt32
    /// The endpoint the event concerns, e.g. `tcp://127.0.0.1:5555`.
    public let endpoint: String

    /// Creates an event from its parts.
    public init(rawEvent: UInt16, value: UInt32, endpoint: String) {
        self.kind = Kind(rawEvent: rawEvent)
        self.rawEvent = rawEvent
        self.value = value
        self.endpoint = endpoint
    }

    /// Decodes the two-frame libzmq 4.x monitor message.
    /// - Parameter message: The message read from the monitor's PAIR socket.
    /// - Returns: The event, or `nil` if the message does not have the 4.x shape.
    public init?(decoding message: Message) {
        guard message.count == 2, message[0].count == 6 else { return nil }
        let header = message[0].bytes
        let event = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 0, as: UInt16.self) }
        let value = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 2, as: UInt32.self) }
        self.init(rawEvent: event, value: value, endpoint: String(decoding: message[1].bytes, as: UTF8.self))
    }

    /// Whether this is one of the handshake-failure events.
    public var isHandshakeFailure: Bool {
        kind == .handshakeFailedAuth || kind == .handshakeFailedProtocol || kind == .handshakeFailedNoDetail
    }

    public var description: String {
        "\(kind)(\(value)) \(endpoint)"
    }
}
