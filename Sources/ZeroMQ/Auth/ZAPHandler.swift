import CZeroMQ
import Logging
import Synchronization

/// A ZAP handler (ZeroMQ RFC 27) that admits only CURVE clients on an allow-list.
///
/// Without a ZAP handler libzmq admits **every** CURVE client that knows the server's
/// public key. Started on an ``IOLoop``, the handler binds `inproc://zeromq.zap.01` in
/// the loop's context (one handler per context) and answers every authentication request
/// of every CURVE server socket in that context: status 200 for an allowed client key,
/// 400 for any other key or mechanism. The allow-list can be replaced at runtime, for
/// key rolling; connections already admitted stay up.
///
/// ```swift
/// let zap = try await ZAPHandler.start(on: loop, allowing: [client.publicKey], logger: logger)
/// zap.allow(newClient.publicKey)
/// ```
public final class ZAPHandler: Sendable {
    /// The endpoint libzmq sends ZAP requests to.
    public static let endpoint = "inproc://zeromq.zap.01"

    /// How many requests were answered each way.
    public struct Statistics: Sendable, Hashable {
        /// Requests answered 200.
        public var accepted: Int
        /// Requests answered 400 (or 500 for malformed requests).
        public var refused: Int
    }

    private let allowed: Mutex<Set<[UInt8]>>
    /// Domains with an allow-list of their own: a request for one of them admits only its keys.
    private let restricted: [String: Set<[UInt8]>]
    private let acceptedCount = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)
    private let loop: IOLoop
    private let logger: Logger

    private init(loop: IOLoop, allowed: Set<[UInt8]>, restricted: [String: Set<[UInt8]>], logger: Logger) {
        self.loop = loop
        self.allowed = Mutex(allowed)
        self.restricted = restricted
        self.logger = logger
    }

    /// Binds the handler in the loop's context and starts answering requests.
    /// - Parameters:
    ///   - loop: The loop whose thread answers requests; its context is the one protected.
    ///   - allowing: The CURVE public keys of the clients to admit.
    ///   - restricting: ZAP domains (``CurveServerOptions/zapDomain``) whose sockets admit only
    ///     the keys listed for them here, instead of `allowing`.
    ///   - logger: Where refusals are logged (metadata `flowkit.zmq.zap.*`).
    /// - Returns: The running handler.
    /// - Throws: ``ZMQError`` (`EADDRINUSE` if the context already has a ZAP handler).
    public static func start(
        on loop: IOLoop, allowing: some Sequence<CurveKey>, restricting: [String: [CurveKey]] = [:], logger: Logger
    ) async throws -> ZAPHandler {
        let handler = ZAPHandler(
            loop: loop, allowed: Set(allowing.map(\.bytes)), restricted: restricting.mapValues { Set($0.map(\.bytes)) }, logger: logger
        )
        try await loop.withCore("ZAPHandler.start") { [handler] core in
            let socket = try Socket(context: core.context, type: .rep)
            do {
                try socket.setOption(.linger, .zero)
                try socket.bind(ZAPHandler.endpoint)
            } catch {
                socket.close(linger: .zero)
                throw error
            }
            core.add(HandlerDriver(socket: socket, owner: ObjectIdentifier(handler), handle: { request, socket in
                let reply = handler.answer(request)
                _ = try? socket.send(reply, dontWait: true)
                return true
            }, onClose: {}))
        }
        return handler
    }

    /// The keys currently admitted.
    public var allowedClientKeys: Set<CurveKey> {
        Set(allowed.withLock { $0 }.compactMap { try? CurveKey(bytes: $0) })
    }

    /// Replaces the allow-list (e.g. when rolling keys).
    /// - Parameter keys: The complete new set of admitted client keys.
    public func setAllowedClientKeys(_ keys: some Sequence<CurveKey>) {
        let bytes = Set(keys.map(\.bytes))
        allowed.withLock { $0 = bytes }
    }

    /// Admits one more client key.
    /// - Parameter key: The client's public key.
    public func allow(_ key: CurveKey) {
        _ = allowed.withLock { $0.insert(key.bytes) }
    }

    /// Stops admitting a client key (its current connections stay up).
    /// - Parameter key: The client's public key.
    public func revoke(_ key: CurveKey) {
        _ = allowed.withLock { $0.remove(key.bytes) }
    }

    /// The counts of accepted and refused requests so far.
    public var statistics: Statistics {
        Statistics(accepted: acceptedCount.load(ordering: .relaxed), refused: refusedCount.load(ordering: .relaxed))
    }

    /// Unbinds the handler.
    ///
    /// - Important: libzmq 4.3 then admits **any** CURVE client that knows a server's
    ///   public key (there is no stable "ZAP required" option). Close the CURVE servers of
    ///   the context first; stopping the loop or terminating the context does that.
    public func stop() async {
        logger.notice("ZAP handler stopping; CURVE servers in this context no longer check client keys")
        _ = try? await loop.withCore("ZAPHandler.stop") { [self] core in
            core.closeHandler(owner: ObjectIdentifier(self))
        }
    }

    /// Decides one request; runs on the loop thread.
    func answer(_ message: Message) -> Message {
        guard let request = ZAPRequest(message) else {
            refusedCount.add(1, ordering: .relaxed)
            logger.warning("malformed ZAP request", metadata: ["flowkit.zmq.zap.frames": "\(message.count)"])
            let requestID = message.count > 1 ? message[1].bytes : []
            return ZAPReply(statusCode: "500", statusText: "malformed request").message(requestID: requestID)
        }
        let reply = decide(request)
        if reply.isAccepted {
            acceptedCount.add(1, ordering: .relaxed)
        } else {
            refusedCount.add(1, ordering: .relaxed)
            logger.notice(
                "refused a client",
                metadata: [
                    "flowkit.zmq.zap.reason": "\(reply.statusText)",
                    "flowkit.zmq.zap.mechanism": "\(request.mechanism)",
                    "flowkit.zmq.zap.address": "\(request.address)",
                    "flowkit.zmq.zap.domain": "\(request.domain)",
                ]
            )
        }
        return reply.message(requestID: request.requestID)
    }

    private func decide(_ request: ZAPRequest) -> ZAPReply {
        guard request.version == "1.0" else {
            return ZAPReply(statusCode: "500", statusText: "unsupported ZAP version \(request.version)")
        }
        guard request.mechanism == "CURVE" else {
            return ZAPReply(statusCode: "400", statusText: "mechanism \(request.mechanism) not allowed")
        }
        guard let key = request.curveClientKey else {
            return ZAPReply(statusCode: "400", statusText: "missing CURVE client key")
        }
        if let keys = restricted[request.domain] {
            guard keys.contains(key.bytes) else {
                return ZAPReply(statusCode: "400", statusText: "client key not allowed in domain \(request.domain)")
            }
        } else {
            guard allowed.withLock({ $0.contains(key.bytes) }) else {
                return ZAPReply(statusCode: "400", statusText: "client key not allowed")
            }
        }
        return ZAPReply(statusCode: "200", statusText: "OK", userID: key.z85)
    }
}
