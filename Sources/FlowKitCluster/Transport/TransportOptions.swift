import Logging
import ZeroMQ

/// The socket options every FlowKit socket gets, set before bind or connect as libzmq requires.
///
/// ROUTER sockets deliberately leave `ZMQ_ROUTER_MANDATORY` off: a reply to a peer that has gone,
/// or whose queue is full, is dropped rather than held, so one slow or vanished client can never
/// stall the replies to everyone else. Every reply that matters is retried by its requester (nodes
/// resend unacknowledged submissions; clients time out and retry).
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
    /// CURVE encryption and authentication; `nil` (the default, for loopback) sends plain text.
    public var curve: CurveSecurity?

    public init() {}

    /// The options of a socket that binds: a CURVE server when CURVE is on.
    func applyServer(to socket: Socket) throws {
        try apply(to: socket)
        if let curve { try socket.configureCurveServer(CurveServerOptions(keyPair: curve.keyPair)) }
    }

    /// The options of a socket that connects to a server with the given public key.
    func applyClient(to socket: Socket, serverKey: CurveKey?) throws {
        try apply(to: socket)
        guard let curve else { return }
        guard let serverKey else {
            throw CurveSecurityError("CURVE is on but the server's public key is unknown: pass it (e.g. --server-key)")
        }
        try socket.configureCurveClient(CurveClientOptions(keyPair: curve.keyPair, serverPublicKey: serverKey))
    }

    /// Starts the ZAP handler that enforces the allow-list, when CURVE is on.
    func startAuthentication(on loop: IOLoop, logger: Logger) async throws -> ZAPHandler? {
        guard let curve else { return nil }
        return try await ZAPHandler.start(on: loop, allowing: curve.allowedClients, logger: logger)
    }

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

/// Runs `body` with a fresh ZeroMQ context and I/O loop, and shuts both down afterwards, when
/// `body` returns or throws: the frame every FlowKit process runs in.
func withIOLoop<Result: Sendable>(
    name: String,
    linger: Duration,
    logger: Logger,
    _ body: (IOLoop) async throws -> Result
) async throws -> Result {
    let context = try ZMQContext()
    let loop: IOLoop
    do {
        loop = try IOLoop(context: context, name: name, logger: logger)
    } catch {
        await context.terminate()
        throw error
    }
    do {
        let result = try await body(loop)
        await loop.shutdown(linger: linger)
        await context.terminate()
        return result
    } catch {
        await loop.shutdown(linger: linger)
        await context.terminate()
        throw error
    }
}
