import ZeroMQ

/// The routing envelope a ROUTER socket adds: the peer's identity, and for REQ peers an empty
/// delimiter frame. Replies go back with the same envelope, so DEALER and REQ clients both work.
struct RouterEnvelope: Sendable, Equatable {
    var identity: [UInt8]
    var delimited: Bool

    /// Splits a message received on a ROUTER socket.
    ///
    /// - Returns: The envelope and the body frames, or `nil` for a message with no identity.
    static func split(_ message: Message) -> (RouterEnvelope, [[UInt8]])? {
        guard let identity = message.first else { return nil }
        let delimited = message.count > 1 && message[1].isEmpty
        let body = message[(delimited ? 2 : 1)...].map(\.bytes)
        return (RouterEnvelope(identity: identity.bytes, delimited: delimited), body)
    }

    /// The message that sends `body` back to this peer.
    func reply(_ body: [[UInt8]]) -> Message {
        Message(parts: delimited ? [identity, []] + body : [identity] + body)
    }
}

extension Message {
    /// The frames' bytes.
    var parts: [[UInt8]] { frames.map(\.bytes) }
}
