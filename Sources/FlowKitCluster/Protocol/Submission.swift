/// An event or cancel a node asks the coordinator to order.
@_spi(Wire) public struct Submission: Sendable, Equatable {
    /// Counts up from 1 within the origin's session; never reused, so retries are recognisable.
    public var submission: UInt64
    public var kind: EntryKind
    public var codec: PayloadCodec
    /// The version of the submitting node's flow (`ReplicatedFlow.version`) for an event; 0 for a
    /// cancel. The entry ordered from it records it.
    public var version: UInt16
    public var submittedAt: UInt64
    /// The ownership term of the effect that sent it (``EffectGroup``'s: the seq of the entry that
    /// started the effect, or of the takeover that moved it); 0 for a client's emit or cancel,
    /// which is never fenced.
    public var term: UInt64
    public var address: String
    public var payload: [UInt8]

    public init(
        submission: UInt64,
        kind: EntryKind,
        codec: PayloadCodec,
        version: UInt16 = 1,
        submittedAt: UInt64,
        term: UInt64 = 0,
        address: String,
        payload: [UInt8]
    ) {
        self.submission = submission
        self.kind = kind
        self.codec = codec
        self.version = version
        self.submittedAt = submittedAt
        self.term = term
        self.address = address
        self.payload = payload
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(submission)
        writer.write(kind.rawValue)
        writer.write(codec.rawValue)
        writer.write(version)
        writer.write(submittedAt)
        writer.write(term)
        writer.writeShortString(address)
        writer.write(contentsOf: payload)
    }

    init(from reader: inout ByteReader) throws {
        submission = try reader.readUInt64("submission")
        guard submission >= 1 else { throw ProtocolError(.malformed, "submission ids start at 1 in every session; got 0") }
        kind = try reader.readKind()
        codec = try reader.readCodec()
        version = try Entry.readVersion(of: kind, from: &reader)
        submittedAt = try reader.readUInt64("submitted-at")
        term = try reader.readUInt64("term")
        address = try reader.readShortString("address")
        payload = reader.readRest()
    }
}
