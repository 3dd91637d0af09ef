/// `FETCH`, from a standby coordinator to the leader's sync socket: "my log runs to `end`, whose
/// entry the epoch `endEpoch` ordered, and is durable up to `durable`; send what follows `end`."
///
/// Frames: `[header request:u64 epoch:u32 durable:u64 end:u64 end-epoch:u32 max-bytes:u32 id:short-string]`.
/// `epoch` is the leader's epoch as the standby knows it; `end` counts what the standby received
/// and is still making durable, so it asks for the next entries while its last ones sync. Answered
/// by ``FetchedMessage``; the leader holds a FETCH (the latest of each standby) for up to its
/// `wait` when it has nothing new, so a caught-up standby hears of the next write at once. A FETCH
/// also tells the leader how far the standby's log is durable: the leader commits an entry once
/// every in-sync coordinator's FETCH says it holds it.
@_spi(Wire) public struct FetchRequest: Sendable, Equatable {
    public var request: UInt64
    public var epoch: UInt32
    /// The last seq the standby holds durably; at most ``end``.
    public var durable: UInt64
    /// The last seq the standby's log holds or is making durable.
    public var end: UInt64
    /// The epoch that ordered the entry at ``end``; 0 for an empty log, and for a log that holds
    /// nothing after a snapshot installed before a restart (the leader takes it as agreeing).
    public var endEpoch: UInt32
    public var maxBytes: UInt32
    /// The standby's coordinator id.
    public var id: String

    public init(request: UInt64, epoch: UInt32, durable: UInt64, end: UInt64, endEpoch: UInt32, maxBytes: UInt32, id: String) {
        self.request = request
        self.epoch = epoch
        self.durable = durable
        self.end = end
        self.endEpoch = endEpoch
        self.maxBytes = maxBytes
        self.id = id
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 48 + id.utf8.count)
        WireHeader.write(.fetch, into: &writer)
        writer.write(request)
        writer.write(epoch)
        writer.write(durable)
        writer.write(end)
        writer.write(endEpoch)
        writer.write(maxBytes)
        writer.writeShortString(id)
        return [writer.bytes]
    }

    init(reader: inout ByteReader) throws {
        request = try reader.readUInt64("request")
        epoch = try reader.readUInt32("epoch")
        durable = try reader.readUInt64("durable")
        end = try reader.readUInt64("end")
        endEpoch = try reader.readUInt32("end epoch")
        maxBytes = try reader.readUInt32("max bytes")
        id = try reader.readShortString("id")
        guard !id.isEmpty else { throw ProtocolError(.malformed, "FETCH needs the standby's coordinator id") }
        // The end epoch may be 0 past seq 0: nothing after a snapshot installed before a restart.
        guard end > 0 || endEpoch == 0 else {
            throw ProtocolError(.malformed, "FETCH: an empty log (end 0) has no end epoch; got \(endEpoch)")
        }
        guard durable <= end else { throw ProtocolError(.malformed, "FETCH: durable \(durable) lies past the end \(end)") }
    }
}

/// `FETCHED`, the leader's answer to a ``FetchRequest``.
///
/// Frames: `[header request:u64 epoch:u32 committed:u64 keep:u64] [records: (len:u32, entry record)*]`.
/// `committed` is the leader's commit point. If the standby's log disagrees with the leader's
/// (its entry at `end` was ordered in another epoch, or the leader's log ends before it),
/// `keep` is the last seq the two logs agree on: the standby truncates its log to it and fetches
/// again; the records frame is then empty. Otherwise `keep` is `UInt64.max` and the records are the
/// leader's entries from `end + 1`, byte for byte as its log holds them.
@_spi(Wire) public struct FetchedMessage: Sendable, Equatable {
    public static let keepAll = UInt64.max

    public var request: UInt64
    public var epoch: UInt32
    public var committed: UInt64
    public var keep: UInt64
    public var records: [[UInt8]]

    public init(request: UInt64, epoch: UInt32, committed: UInt64, keep: UInt64 = FetchedMessage.keepAll, records: [[UInt8]]) {
        self.request = request
        self.epoch = epoch
        self.committed = committed
        self.keep = keep
        self.records = records
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 32)
        WireHeader.write(.fetched, into: &header)
        header.write(request)
        header.write(epoch)
        header.write(committed)
        header.write(keep)
        var body = ByteWriter(capacity: records.reduce(0) { $0 + $1.count + 4 })
        for record in records { body.writeLengthPrefixed(record) }
        return [header.bytes, body.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "FETCHED")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .fetched)
        request = try reader.readUInt64("request")
        epoch = try reader.readUInt32("epoch")
        committed = try reader.readUInt64("committed")
        keep = try reader.readUInt64("keep")
        try reader.expectEnd(of: "FETCHED's header")
        var body = ByteReader(frames[1], context: "FETCHED records")
        // The standby keeps them byte for byte in its log, in this build's layout.
        let layout = Entry.RecordLayout(protocol: reader.protocolVersion)
        records = try body.mapRecords("entry") { layout.upgrade($0.readRest()) }
        guard keep == Self.keepAll || records.isEmpty else {
            throw ProtocolError(.malformed, "FETCHED carries records or a truncation, not both")
        }
    }
}

/// `NOT_LEADER`, a standby coordinator's answer on its submit socket to a SUBMIT or HELLO: it
/// does not order; the leader it follows does (or none is known yet: an empty id).
///
/// Frames: `[header epoch:u32 id:short-string submit:short-string publish:short-string sync:short-string]`.
@_spi(Wire) public struct NotLeaderMessage: Sendable, Equatable {
    public var epoch: UInt32
    /// The leader's coordinator id; empty while no leader is known.
    public var id: String
    public var endpoints: CoordinatorEndpoints

    public init(epoch: UInt32, id: String, endpoints: CoordinatorEndpoints) {
        self.epoch = epoch
        self.id = id
        self.endpoints = endpoints
    }

    public var frames: [[UInt8]] {
        var writer = ByteWriter(capacity: 64)
        WireHeader.write(.notLeader, into: &writer)
        writer.write(epoch)
        for field in [id, endpoints.submit, endpoints.publish, endpoints.sync] { writer.writeShortString(field) }
        return [writer.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 1, for: "NOT_LEADER")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .notLeader)
        epoch = try reader.readUInt32("epoch")
        id = try reader.readShortString("id")
        endpoints = CoordinatorEndpoints(
            submit: try reader.readShortString("submit"), publish: try reader.readShortString("publish"), sync: try reader.readShortString("sync")
        )
        try reader.expectEnd(of: "NOT_LEADER")
    }
}
