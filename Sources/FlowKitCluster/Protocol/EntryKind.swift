/// What an entry asks every replica to do. Values are part of the wire protocol.
public enum EntryKind: UInt8, Sendable, Codable {
    /// Apply an event: the payload is the event, in the entry's codec.
    case event = 1
    /// Cancel the effects marked with a cancel id: the payload names it (``CancelTarget``), by type and
    /// text (codec 2) or by text alone (codec 1).
    case cancel = 2
    /// Cancel every effect of the instance: the payload is empty.
    case cancelAll = 3
    /// An entry too large for any message, which the coordinator serves in place of the one in its
    /// log (written by an older version, or by a bug): every replica skips it the same way. The
    /// payload is the original payload's size, a `u64`. Never submitted.
    case quarantined = 4
    /// The instance's effects move to another node: the coordinator orders one for each instance
    /// whose effects a node that went down may have run. The payload is a `Takeover`; origin,
    /// session and submission are 0. Never submitted.
    case takeover = 5
}

/// How an event payload is encoded. Values are part of the wire protocol.
///
/// Every entry says its codec, so codecs are never silently mixed: a replica decodes each entry
/// with the codec it names, and a flow registered for JSON only refuses binary payloads.
public enum PayloadCodec: UInt8, Sendable, Codable, CustomStringConvertible {
    /// UTF-8 JSON, the `Codable` encoding of the event. Readable from any language.
    case json = 1
    /// The flow's own compact binary encoding (`BinaryEventCodable`). Faster; FlowKit-specific.
    case binary = 2

    public var description: String { self == .json ? "json" : "binary" }

    /// The codec a wire byte names: the same check, code and message wherever a codec is read.
    init(wire raw: UInt8) throws {
        guard let codec = PayloadCodec(rawValue: raw) else {
            throw ProtocolError(.unsupportedCodec, "codec \(raw) is unknown; use 1 (JSON) or 2 (binary)")
        }
        self = codec
    }
}
