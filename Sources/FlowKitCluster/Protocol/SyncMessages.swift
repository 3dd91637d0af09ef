/// `RANGE_REQUEST`, to the coordinator's sync socket: entries `from...to` from the log.
///
/// Frames: `[header request:u64 from:u64 to:u64 max:u32]`. Answered by ``RangeMessage``, or by an
/// `ERROR` with code `notFound` when `from` was compacted away (join through a snapshot instead).
@_spi(Wire) public struct RangeRequest: Sendable, Equatable {
    public var request: UInt64
    public var from: UInt64
    public var to: UInt64
    /// The most entries to send back; the reply may hold fewer.
    public var maxCount: UInt32

    public init(request: UInt64, from: UInt64, to: UInt64, maxCount: UInt32) {
        self.request = request
        self.from = from
        self.to = to
        self.maxCount = maxCount
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 32)
        WireHeader.write(.rangeRequest, into: &writer)
        writer.write(request)
        writer.write(from)
        writer.write(to)
        writer.write(maxCount)
        return [writer.bytes]
    }

    init(reader: inout ByteReader) throws {
        request = try reader.readUInt64("request")
        from = try reader.readUInt64("from")
        to = try reader.readUInt64("to")
        maxCount = try reader.readUInt32("max")
        guard from >= 1, from <= to else {
            throw ProtocolError(.malformed, "RANGE_REQUEST needs 1 <= from <= to; got \(from)...\(to)")
        }
    }
}

/// `RANGE`, the answer to a ``RangeRequest``: consecutive entries starting at the requested `from`.
///
/// Frames: `[header request:u64 epoch:u32 head:u64] [records: (len:u32, entry record)*]`.
@_spi(Wire) public struct RangeMessage: Sendable, Equatable {
    public var request: UInt64
    public var epoch: UInt32
    public var head: UInt64
    public var entries: [Entry]

    public init(request: UInt64, epoch: UInt32, head: UInt64, entries: [Entry]) {
        self.request = request
        self.epoch = epoch
        self.head = head
        self.entries = entries
    }

    /// The frames around entry records as the log stores them.
    static func frames(request: UInt64, epoch: UInt32, head: UInt64, records: [[UInt8]]) -> [[UInt8]] {
        var header = ByteWriter(capacity: 24)
        WireHeader.write(.range, into: &header)
        header.write(request)
        header.write(epoch)
        header.write(head)
        var body = ByteWriter(capacity: records.reduce(0) { $0 + $1.count + 4 })
        for record in records { body.writeLengthPrefixed(record) }
        return [header.bytes, body.bytes]
    }

    public var frames: [[UInt8]] {
        Self.frames(request: request, epoch: epoch, head: head, records: entries.map(\.encoded))
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "RANGE")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .range)
        request = try reader.readUInt64("request")
        epoch = try reader.readUInt32("epoch")
        head = try reader.readUInt64("head")
        try reader.expectEnd(of: "RANGE's header")
        var records = ByteReader(frames[1], context: "RANGE records", protocolVersion: reader.protocolVersion)
        entries = try decodeEntries(&records)
    }
}

/// `SNAPSHOT_REQUEST`, to the coordinator's sync socket: every instance's state.
///
/// Frames: `[header request:u64 (sessions:u8)?]`. Answered by one or more
/// ``SnapshotChunkMessage``s, the last one flagged. `sessions` 1 (a standby coordinator's request)
/// asks for the sessions the duplicate table remembers, on the last chunk; a node sends none.
@_spi(Wire) public struct SnapshotRequest: Sendable, Equatable {
    public var request: UInt64
    public var withSessions: Bool

    public init(request: UInt64, withSessions: Bool = false) {
        self.request = request
        self.withSessions = withSessions
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 12)
        WireHeader.write(.snapshotRequest, into: &writer)
        writer.write(request)
        if withSessions { writer.write(1 as UInt8) }
        return [writer.bytes]
    }
}

/// A request on the coordinator's sync socket.
@_spi(Wire) public enum SyncRequest: Sendable, Equatable {
    case range(RangeRequest)
    case snapshot(SnapshotRequest)
    /// From a follower coordinator, to the leader's sync socket.
    case fetch(FetchRequest)

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 1, for: "sync request")
        var (type, reader) = try WireHeader.read(frames[0], expecting: .rangeRequest, .snapshotRequest, .fetch)
        switch type {
        case .rangeRequest:
            self = .range(try RangeRequest(reader: &reader))
            try reader.expectEnd(of: "RANGE_REQUEST")
        case .fetch:
            self = .fetch(try FetchRequest(reader: &reader))
            try reader.expectEnd(of: "FETCH")
        default:
            let request = try reader.readUInt64("request")
            let withSessions = reader.remaining > 0 ? try reader.readUInt8("sessions") != 0 : false
            self = .snapshot(SnapshotRequest(request: request, withSessions: withSessions))
            try reader.expectEnd(of: "SNAPSHOT_REQUEST")
        }
    }

    public var request: UInt64 {
        switch self {
        case .range(let range): range.request
        case .snapshot(let snapshot): snapshot.request
        case .fetch(let fetch): fetch.request
        }
    }
}
