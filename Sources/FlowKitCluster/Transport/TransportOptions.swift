import Logging
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif

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
    /// Which ZMTP implementation carries the sockets: FlowKit's own (the default), which reads and
    /// writes on each process's I/O loop thread, or libzmq. Sockets with CURVE on, or with an
    /// endpoint other than `tcp://`, always use libzmq. The environment variable
    /// `FLOWKIT_ENGINE=libzmq` changes the default (child processes inherit it).
    public var engine: SocketEngine = TransportOptions.defaultEngine

    /// `FLOWKIT_ENGINE` from the environment when it names an engine, else `SocketEngine.native`.
    public static var defaultEngine: SocketEngine {
        guard let value = getenv("FLOWKIT_ENGINE") else { return .native }
        return SocketEngine(rawValue: String(cString: value)) ?? .native
    }

    public init() {}

    /// The engine for a socket with these endpoints.
    public func engine(for endpoints: [String]) -> SocketEngine {
        curve == nil && endpoints.allSatisfy { $0.hasPrefix("tcp://") } ? engine : .libzmq
    }

    /// Opens a socket that binds to `endpoint`, a CURVE server when CURVE is on, with every
    /// FlowKit option set; `configure` adds the socket's own before the bind.
    /// - Returns: The socket and the endpoint bound.
    func openServer(
        _ type: SocketType,
        on loop: IOLoop,
        configuration: AsyncSocket.Configuration,
        binding endpoint: String,
        zapDomain: String = CurveSecurity.clientsDomain,
        _ configure: @escaping @Sendable (any SocketSetup) throws -> Void = { _ in }
    ) async throws -> (AsyncSocket, String) {
        try await loop.open(type, engine: engine(for: [endpoint]), configuration: configuration) { [self] socket in
            try setOptions(on: socket)
            if let curve { try Self.curveSocket(socket).configureCurveServer(CurveServerOptions(keyPair: curve.keyPair, zapDomain: zapDomain)) }
            try configure(socket)
            return try socket.bind(endpoint)
        }
    }

    /// Opens a socket that connects to `endpoints`, servers with the given public key, with every
    /// FlowKit option set; `configure` adds the socket's own before the connects.
    func openClient(
        _ type: SocketType,
        on loop: IOLoop,
        configuration: AsyncSocket.Configuration = AsyncSocket.Configuration(),
        connecting endpoints: [String],
        serverKey: CurveKey?,
        _ configure: @escaping @Sendable (any SocketSetup) throws -> Void = { _ in }
    ) async throws -> AsyncSocket {
        if curve != nil, serverKey == nil {
            throw CurveSecurityError("CURVE is on but the server's public key is unknown: pass it (e.g. --server-key)")
        }
        let (socket, _) = try await loop.open(type, engine: engine(for: endpoints), configuration: configuration) { [self] socket in
            try setOptions(on: socket)
            if let curve, let serverKey {
                try Self.curveSocket(socket).configureCurveClient(CurveClientOptions(keyPair: curve.keyPair, serverPublicKey: serverKey))
            }
            try configure(socket)
            for endpoint in endpoints { try socket.connect(endpoint) }
        }
        return socket
    }

    /// The socket as one that can have CURVE (libzmq's): any other is refused, loudly, rather than
    /// left to send plain text.
    static func curveSocket(_ socket: any SocketSetup) throws -> Socket {
        guard let socket = socket as? Socket else {
            throw CurveSecurityError("CURVE is on, but this socket is carried by an engine without CURVE (\(type(of: socket))); refusing to open it in plain text")
        }
        return socket
    }

    /// Starts the ZAP handler that enforces the allow-lists, when CURVE is on: sockets of the
    /// ``CurveSecurity/nodesDomain`` admit only the node keys, the others the client keys.
    func startAuthentication(on loop: IOLoop, logger: Logger) async throws -> ZAPHandler? {
        guard let curve else { return nil }
        let restricted = curve.allowedNodes.map { [CurveSecurity.nodesDomain: $0] } ?? [:]
        return try await ZAPHandler.start(on: loop, allowing: curve.allowedClients, restricting: restricted, logger: logger)
    }

    /// Sets the options every FlowKit socket has: the frame limit, linger, ZMTP heartbeats, and the rest below.
    func setOptions(on socket: any SocketSetup) throws {
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
