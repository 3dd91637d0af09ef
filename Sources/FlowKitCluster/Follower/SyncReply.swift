import ZeroMQ

/// A message from the coordinator's sync socket, decoded.
///
/// Decoding is pure, so a node does it on another thread than the one applying entries: during a
/// replay each RANGE carries up to 10,000 entries, and decoding them costs about as much as
/// applying them.
enum SyncReply: Sendable {
    case range(RangeMessage)
    case snapshotChunk(SnapshotChunkMessage)
    case error(ErrorReply)
    /// A message that did not decode; counted and logged by the node.
    case invalid(any Error)

    init(_ message: Message) {
        let parts = message.parts
        do {
            guard let first = parts.first else { throw ProtocolError(.wrongFrameCount, "empty sync reply") }
            let (type, _) = try WireHeader.read(first, expecting: .range, .snapshotChunk, .error)
            switch type {
            case .range: self = .range(try RangeMessage(frames: parts))
            case .snapshotChunk: self = .snapshotChunk(try SnapshotChunkMessage(frames: parts))
            default: self = .error(try ErrorReply(frames: parts))
            }
        } catch {
            self = .invalid(error)
        }
    }
}
