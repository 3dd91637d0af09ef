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
        var parts = message.frames.map(\.bytes)
        guard !parts.isEmpty else { return nil }
        let identity = parts.removeFirst()
        var delimited = false
        if parts.first?.isEmpty == true {
            parts.removeFirst()
            delimited = true
        }
        return (RouterEnvelope(identity: identity, delimited: delimited), parts)
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
