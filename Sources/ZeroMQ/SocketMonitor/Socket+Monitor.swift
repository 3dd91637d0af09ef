import CZeroMQ

/// Which monitor events to ask libzmq for.
public struct MonitorEventMask: OptionSet, Sendable, Hashable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// A connection was made (see ``MonitorEvent/Kind/connected``).
    public static let connected = MonitorEventMask(rawValue: ZMQ_EVENT_CONNECTED)
    /// A connect is pending.
    public static let connectDelayed = MonitorEventMask(rawValue: ZMQ_EVENT_CONNECT_DELAYED)
    /// A reconnect was scheduled.
    public static let connectRetried = MonitorEventMask(rawValue: ZMQ_EVENT_CONNECT_RETRIED)
    /// A bind is listening.
    public static let listening = MonitorEventMask(rawValue: ZMQ_EVENT_LISTENING)
    /// A bind failed.
    public static let bindFailed = MonitorEventMask(rawValue: ZMQ_EVENT_BIND_FAILED)
    /// A connection was accepted.
    public static let accepted = MonitorEventMask(rawValue: ZMQ_EVENT_ACCEPTED)
    /// Accepting failed.
    public static let acceptFailed = MonitorEventMask(rawValue: ZMQ_EVENT_ACCEPT_FAILED)
    /// A connection was closed.
    public static let closed = MonitorEventMask(rawValue: ZMQ_EVENT_CLOSED)
    /// Closing failed.
    public static let closeFailed = MonitorEventMask(rawValue: ZMQ_EVENT_CLOSE_FAILED)
    /// A session broke (peer gone, or dropped for MAXMSGSIZE).
    public static let disconnected = MonitorEventMask(rawValue: ZMQ_EVENT_DISCONNECTED)
    /// The monitor stopped (always requested by ``AsyncSocket/monitor(events:buffering:)``).
    public static let monitorStopped = MonitorEventMask(rawValue: ZMQ_EVENT_MONITOR_STOPPED)
    /// A handshake failed for a system reason.
    public static let handshakeFailedNoDetail = MonitorEventMask(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    /// A handshake (and any authentication) succeeded.
    public static let handshakeSucceeded = MonitorEventMask(rawValue: ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
    /// A handshake failed on a protocol error.
    public static let handshakeFailedProtocol = MonitorEventMask(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
    /// Authentication was refused (value: the ZAP status).
    public static let handshakeFailedAuth = MonitorEventMask(rawValue: ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
    /// All handshake outcomes.
    public static let handshakes: MonitorEventMask = [.handshakeSucceeded, .handshakeFailedAuth, .handshakeFailedProtocol, .handshakeFailedNoDetail]
    /// Every event libzmq 4.3 can report.
    public static let all = MonitorEventMask(rawValue: ZMQ_EVENT_ALL)
}

extension Socket {
    /// Starts publishing this socket's events on an `inproc://` PAIR endpoint.
    ///
    /// Connect a PAIR socket to `endpoint` and decode each message with
    /// ``MonitorEvent/init(decoding:)``, or use ``AsyncSocket/monitor(events:buffering:)``
    /// which does both on the I/O loop.
    /// - Parameters:
    ///   - endpoint: An `inproc://` endpoint unique in the context.
    ///   - events: The events to report.
    /// - Throws: ``ZMQError`` (`EPROTONOSUPPORT` for a non-inproc endpoint).
    public func startMonitor(endpoint: String, events: MonitorEventMask = .all) throws {
        let socket = try open("zmq_socket_monitor(\(endpoint))")
        try retrying("zmq_socket_monitor(\(endpoint))") { zmq_socket_monitor(socket, endpoint, events.rawValue) }
    }

    /// Stops the monitor started by ``startMonitor(endpoint:events:)``; the monitor
    /// receives ``MonitorEvent/Kind/monitorStopped``.
    public func stopMonitor() throws {
        let socket = try open("zmq_socket_monitor(nil)")
        try retrying("zmq_socket_monitor(nil)") { zmq_socket_monitor(socket, nil, 0) }
    }
}
