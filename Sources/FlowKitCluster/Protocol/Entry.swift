/// One position of the ordered log: what happened, where, and who submitted it.
///
/// Entries travel on the publish socket (batched per instance), in sync replies, and in the
/// coordinator's log, always in the same record layout (docs/PROTOCOL.md, "Entry record").
public struct Entry: Sendable, Equatable {
    /// The global position, from 1, without gaps.
    public var seq: UInt64
    /// The coordinator term that ordered the entry.
    public var epoch: UInt32
    public var kind: EntryKind
    public var codec: PayloadCodec
    /// The node that submitted the entry: the only node that runs its effects.
    public var origin: UInt32
    /// The origin process's session; with `submission`, the key duplicates are dropped by.
    public var session: UInt64
    public var submission: UInt64
    /// Microseconds since the Unix epoch when the origin submitted it (the origin's clock).
    public var submittedAt: UInt64
    /// Microseconds since the Unix epoch when the coordinator made it durable.
    public var committedAt: UInt64
    /// `flow/key`.
    public var address: String
    public var payload: [UInt8]

    public init(
        seq: UInt64,
        epoch: UInt32,
        kind: EntryKind,
        codec: PayloadCodec,
        origin: UInt32,
        session: UInt64,
        submission: UInt64,
        submittedAt: UInt64,
        committedAt: UInt64,
        address: String,
        payload: [UInt8]
    ) {
        self.seq = seq
        self.epoch = epoch
        self.kind = kind
        self.codec = codec
        self.origin = origin
        self.session = session
        self.submission = submission
        self.submittedAt = submittedAt
        self.committedAt = committedAt
        self.address = address
        self.payload = payload
    }

    /// The fixed part of the record, before the address.
    static let fixedSize = 50

    /// The seq of an encoded entry record (its first field), without decoding the rest.
    static func peekSeq(_ record: [UInt8]) -> UInt64? {
        guard record.count >= 12 else { return nil }
        return record[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The epoch of an encoded entry record (its second field).
    static func peekEpoch(_ record: [UInt8]) -> UInt32? {
        guard record.count >= 12 else { return nil }
        return record[8..<12].reduce(0) { $0 << 8 | UInt32($1) }
    }

    func encode(into writer: inout ByteWriter) {
        writer.write(seq)
        writer.write(epoch)
        writer.write(kind.rawValue)
        writer.write(codec.rawValue)
        writer.write(origin)
        writer.write(session)
        writer.write(submission)
        writer.write(submittedAt)
        writer.write(committedAt)
        writer.writeShortString(address)
        writer.write(contentsOf: payload)
    }

    /// The record's bytes, as stored in the log.
    @_spi(Wire) public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.fixedSize + 2 + address.utf8.count + payload.count)
        encode(into: &writer)
        return writer.bytes
    }

    init(from reader: inout ByteReader) throws {
        seq = try reader.readUInt64("seq")
        epoch = try reader.readUInt32("epoch")
        kind = try reader.readKind()
        codec = try reader.readCodec()
        origin = try reader.readUInt32("origin")
        session = try reader.readUInt64("session")
        submission = try reader.readUInt64("submission")
        submittedAt = try reader.readUInt64("submitted-at")
        committedAt = try reader.readUInt64("committed-at")
        address = try reader.readShortString("address")
        payload = reader.readRest()
    }

    /// Decodes a record read back from the log.
    @_spi(Wire) public init(decoding record: [UInt8]) throws {
        var reader = ByteReader(record, context: "an entry record")
        try self.init(from: &reader)
    }
}

extension ByteReader {
    mutating func readKind() throws -> EntryKind {
        let raw = try readUInt8("kind")
        guard let kind = EntryKind(rawValue: raw) else {
            throw ProtocolError(.malformed, "\(context): unknown entry kind \(raw)")
        }
        return kind
    }

    mutating func readCodec() throws -> PayloadCodec {
        try PayloadCodec(wire: try readUInt8("codec"))
    }
}
