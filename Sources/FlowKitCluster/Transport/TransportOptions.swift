import ZeroMQ

/// The socket options every FlowKit socket gets, set before bind or connect as libzmq requires.
public struct TransportOptions: Sendable {
    /// The largest message accepted; a peer that sends more is disconnected by libzmq.
    public var maxMessageBytes: Int64 = 64 << 20
    /// How long unsent messages may wait when a socket closes.
    public var linger: Duration = .milliseconds(200)
    /// ZMTP heartbeats, so a dead peer is noticed even when idle.
    public var heartbeatInterval: Duration = .seconds(1)
    public var heartbeatTimeout: Duration = .seconds(3)
    public var reconnectInterval: Duration = .milliseconds(100)
    public var reconnectIntervalMax: Duration = .seconds(2)
    public var handshakeInterval: Duration = .seconds(5)
    /// Send and receive high-water marks, in messages.
    public var highWaterMark: Int32 = 100_000

    public init() {}

    func apply(to socket: Socket) throws {
        try socket.setOption(.maxMessageSize, maxMessageBytes)
        try socket.setOption(.linger, linger)
        try socket.setOption(.heartbeatInterval, heartbeatInterval)
        try socket.setOption(.heartbeatTimeout, heartbeatTimeout)
        try socket.setOption(.reconnectInterval, reconnectInterval)
        try socket.setOption(.reconnectIntervalMax, reconnectIntervalMax)
        try socket.setOption(.handshakeInterval, handshakeInterval)
        try socket.setOption(.sendHighWaterMark, highWaterMark)
        try socket.setOption(.receiveHighWaterMark, highWaterMark)
    }
}
