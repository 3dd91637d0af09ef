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
    /// The version of the flow that wrote the payload (`ReplicatedFlow.version`) for an event; 0
    /// for an entry without a payload of the flow's (a cancel, a takeover, a stand-in). Entries
    /// written before versions were recorded read as version 1.
    public var version: UInt16
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
        version: UInt16 = 1,
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
        self.version = version
        self.origin = origin
        self.session = session
        self.submission = submission
        self.submittedAt = submittedAt
        self.committedAt = committedAt
        self.address = address
        self.payload = payload
    }

    /// The fixed part of the record, before the address.
    static let fixedSize = 52

    /// Where the version field sits; records in the layout before it (``RecordLayout/unversioned``)
    /// lack its two bytes.
    static let versionOffset = 14

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
        writer.write(version)
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
        version = try Self.readVersion(of: kind, from: &reader)
        origin = try reader.readUInt32("origin")
        session = try reader.readUInt64("session")
        submission = try reader.readUInt64("submission")
        submittedAt = try reader.readUInt64("submitted-at")
        committedAt = try reader.readUInt64("committed-at")
        address = try reader.readShortString("address")
        payload = reader.readRest()
    }

    /// The record's version field; a record of protocol 3 has none: version 1 for an event, 0
    /// otherwise (``RecordLayout/unversioned``).
    static func readVersion(of kind: EntryKind, from reader: inout ByteReader) throws -> UInt16 {
        guard reader.protocolVersion >= 4 else { return kind == .event ? 1 : 0 }
        return try reader.readUInt16("version")
    }

    /// Decodes a record read back from the log.
    @_spi(Wire) public init(decoding record: [UInt8]) throws {
        var reader = ByteReader(record, context: "an entry record")
        try self.init(from: &reader)
    }

    /// The payload format (``SegmentLog/Options/payloadFormat``) of a coordinator's log written by
    /// this build: its entry record layout.
    @_spi(Wire) public static var logPayloadFormat: UInt32 { RecordLayout.current.rawValue }

    /// The layouts an entry record has had, by the number a log segment records for its records.
    enum RecordLayout: UInt32 {
        /// Protocol 3 and before: no version field; every event reads as version 1.
        case unversioned = 0
        /// Protocol 4: a version (u16) after the codec.
        case versioned = 1

        static let current = Self.versioned

        /// The layout of the entry records of a message of protocol `version`.
        init(protocol version: UInt8) {
            self = version >= 4 ? .versioned : .unversioned
        }

        /// A record of this layout in the current one.
        func upgrade(_ record: [UInt8]) -> [UInt8] {
            switch self {
            case .versioned:
                return record
            case .unversioned:
                guard record.count >= Entry.versionOffset else { return record }  // short: decoding says so
                // An event's payload is the flow's, written before versions: version 1. Nothing
                // else carries one.
                let isEvent = record[Entry.versionOffset - 2] == EntryKind.event.rawValue
                var upgraded = [UInt8]()
                upgraded.reserveCapacity(record.count + 2)
                upgraded.append(contentsOf: record[..<Entry.versionOffset])
                upgraded.append(0)
                upgraded.append(isEvent ? 1 : 0)
                upgraded.append(contentsOf: record[Entry.versionOffset...])
                return upgraded
            }
        }
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
