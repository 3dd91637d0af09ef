/// A ZAP authentication request (ZeroMQ RFC 27), as libzmq sends it to the handler.
///
/// Frames after the REP envelope: version (`"1.0"`), request id, domain, address,
/// routing id, mechanism, then the mechanism's credentials (for CURVE: the client's
/// 32-byte long-term public key).
public struct ZAPRequest: Sendable, Hashable {
    /// The protocol version; only `"1.0"` is defined.
    public var version: String
    /// Opaque id echoed back in the reply.
    public var requestID: [UInt8]
    /// The server socket's `ZMQ_ZAP_DOMAIN`.
    public var domain: String
    /// The client's network address (IP address for TCP).
    public var address: String
    /// The client's routing id, if any.
    public var routingID: [UInt8]
    /// `"NULL"`, `"PLAIN"` or `"CURVE"`.
    public var mechanism: String
    /// The mechanism's credential frames.
    public var credentials: [[UInt8]]

    /// Parses a request message.
    /// - Parameter message: The frames received on the ZAP REP socket.
    /// - Returns: `nil` if fewer than the 6 fixed frames are present.
    public init?(_ message: Message) {
        guard message.count >= 6 else { return nil }
        version = String(decoding: message[0].bytes, as: UTF8.self)
        requestID = message[1].bytes
        domain = String(decoding: message[2].bytes, as: UTF8.self)
        address = String(decoding: message[3].bytes, as: UTF8.self)
        routingID = message[4].bytes
        mechanism = String(decoding: message[5].bytes, as: UTF8.self)
        credentials = message.dropFirst(6).map(\.bytes)
    }

    /// The CURVE client public key, when the mechanism is CURVE.
    public var curveClientKey: CurveKey? {
        guard mechanism == "CURVE", let key = credentials.first else { return nil }
        return try? CurveKey(bytes: key)
    }
}

/// A ZAP reply (RFC 27): the handler's verdict on one request.
public struct ZAPReply: Sendable, Hashable {
    /// `"200"` (allowed), `"300"` (temporary error), `"400"` (denied), `"500"` (internal error).
    public var statusCode: String
    /// A short reason, logged by libzmq on failure.
    public var statusText: String
    /// The authenticated user id, readable by the server as message metadata.
    public var userID: String

    /// - Parameters:
    ///   - statusCode: The RFC 27 status code.
    ///   - statusText: A short reason.
    ///   - userID: The user id for accepted clients.
    public init(statusCode: String, statusText: String, userID: String = "") {
        self.statusCode = statusCode
        self.statusText = statusText
        self.userID = userID
    }

    /// Whether the reply admits the client.
    public var isAccepted: Bool { statusCode == "200" }

    /// The reply frames for `requestID` (version, request id, status code, status text,
    /// user id, empty metadata).
    /// - Parameter requestID: The id from the request.
    /// - Returns: The message to send back.
    public func message(requestID: [UInt8]) -> Message {
        Message(frames: [Frame("1.0"), Frame(requestID), Frame(statusCode), Frame(statusText), Frame(userID), .empty])
    }
}
