import ZeroMQ

/// The routing envelope a ROUTER socket adds: the peer's identity, and for REQ peers an empty
/// delimiter frame. Replies go back with the same envelope, so DEALER and REQ clients both work.
///
/// It also remembers the protocol version the peer's message came in: the reply goes back in it
/// (``WireDialect``), so a peer of an older build is answered in its own version.
struct RouterEnvelope: Sendable, Equatable {
    var identity: [UInt8]
    var delimited: Bool
    var protocolVersion: UInt8 = WireHeader.version

    /// Splits a message received on a ROUTER socket.
    ///
    /// - Returns: The envelope and the body frames, or `nil` for a message with no identity.
    static func split(_ message: Message) -> (RouterEnvelope, [[UInt8]])? {
        guard let identity = message.first else { return nil }
        let delimited = message.count > 1 && message[1].isEmpty
        let body = message[(delimited ? 2 : 1)...].map(\.bytes)
        // A header's version byte, if the body starts with one: the version to answer in (or the
        // nearest this process speaks, whose refusal the peer reads).
        let header = body.first ?? []
        let version = header.count >= 3 && header[0] == WireHeader.magic.0 && header[1] == WireHeader.magic.1
            ? WireHeader.answer(header[2]) : WireHeader.spoken.upperBound
        return (RouterEnvelope(identity: identity.bytes, delimited: delimited, protocolVersion: version), body)
    }

    /// `body`, as this build encodes it, in the peer's protocol version.
    func translated(_ body: [[UInt8]]) -> [[UInt8]] {
        WireDialect.answer(body, in: protocolVersion)
    }

    /// The message that sends `body` back to this peer, in its protocol version.
    func reply(_ body: [[UInt8]]) -> Message {
        let body = translated(body)
        return Message(parts: delimited ? [identity, []] + body : [identity] + body)
    }
}

extension Message {
    /// The frames' bytes.
    var parts: [[UInt8]] { frames.map(\.bytes) }
}
