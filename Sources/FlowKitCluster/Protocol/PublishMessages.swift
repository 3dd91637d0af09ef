/// `ENTRIES`, on the publish socket: consecutive entries, of one instance or of all.
///
/// Frames: `[topic] [header epoch:u32] [records: (len:u32, entry record)*]`. The entries' seqs are
/// consecutive. Under the topic `#` (``batchTopic``) a message carries a stretch of the order with
/// entries of any instances: what replicas subscribe to. Under an address topic it carries a run of
/// that instance's entries that follow each other in the order: what a subscriber filtering by
/// flow or instance receives (the coordinator publishes those only while someone subscribes to
/// an address prefix).
@_spi(Wire) public struct EntriesMessage: Sendable, Equatable {
    /// The topic of batches of every entry, in order.
    public static let batchTopic = "#"

    public var address: String
    public var epoch: UInt32
    public var entries: [Entry]

    public init(address: String, epoch: UInt32, entries: [Entry]) {
        self.address = address
        self.epoch = epoch
        self.entries = entries
    }

    public var frames: [[UInt8]] {
        var records = ByteWriter(capacity: entries.count * 96)
        for entry in entries { records.writeLengthPrefixed { entry.encode(into: &$0) } }
        return Self.frames(address: address, epoch: epoch, records: records.bytes)
    }

    /// The frames around records that are already encoded (straight from the log).
    static func frames(address: String, epoch: UInt32, records: [UInt8]) -> [[UInt8]] {
        var header = ByteWriter(capacity: 8)
        WireHeader.write(.entries, into: &header)
        header.write(epoch)
        return [Array(address.utf8), header.bytes, records]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 3, for: "ENTRIES")
        var (_, reader) = try WireHeader.read(frames[1], expecting: .entries)
        guard let address = String(validating: frames[0], as: UTF8.self) else {
            throw ProtocolError(.malformed, "the ENTRIES topic is not UTF-8")
        }
        self.address = address
        epoch = try reader.readUInt32("epoch")
        try reader.expectEnd(of: "ENTRIES's header")
        var records = ByteReader(frames[2], context: "ENTRIES records", protocolVersion: reader.protocolVersion)
        entries = try decodeEntries(&records)
        guard !entries.isEmpty else { throw ProtocolError(.malformed, "an ENTRIES message carries at least one entry") }
        for (index, entry) in entries.enumerated() {
            guard address == Self.batchTopic || entry.address == address else {
                throw ProtocolError(.malformed, "entry \(entry.seq) is for \(entry.address), not the topic \(address)")
            }
            // Compared without adding: a previous seq of UInt64.max (a fuzzer's) overflowed here.
            guard index == 0 || (entries[index - 1].seq < .max && entry.seq == entries[index - 1].seq + 1) else {
                throw ProtocolError(.malformed, "the entries of one ENTRIES message must have consecutive seqs")
            }
        }
    }
}

/// Decodes length-prefixed entry records.
func decodeEntries(_ reader: inout ByteReader) throws -> [Entry] {
    try reader.mapRecords("entry") { try Entry(from: &$0) }
}

/// The reserved topics of the publish socket. Addresses never start with `$`.
@_spi(Wire) public enum ControlTopic {
    /// ``HeartbeatMessage``.
    public static let heartbeat = "$hb"
    /// ``ClusterStatusMessage``.
    public static let status = "$status"
    /// ``AlarmMessage``.
    public static let alarm = "$alarm"
}

/// `HEARTBEAT`, topic `$hb`: the coordinator is alive, and its log ends at `head`.
///
/// Frames: `["$hb"] [header epoch:u32 head:u64 time:u64]`. A subscriber that has applied less than
/// `head` and saw no entry for a while has missed some: it repairs the gap from the sync socket.
@_spi(Wire) public struct HeartbeatMessage: Sendable, Equatable {
    public var epoch: UInt32
    public var head: UInt64
    /// Microseconds since the Unix epoch, the coordinator's clock.
    public var time: UInt64

    public init(epoch: UInt32, head: UInt64, time: UInt64) {
        self.epoch = epoch
        self.head = head
        self.time = time
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 24)
        WireHeader.write(.heartbeat, into: &header)
        header.write(epoch)
        header.write(head)
        header.write(time)
        return [Array(ControlTopic.heartbeat.utf8), header.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "HEARTBEAT")
        var (_, reader) = try WireHeader.read(frames[1], expecting: .heartbeat)
        epoch = try reader.readUInt32("epoch")
        head = try reader.readUInt64("head")
        time = try reader.readUInt64("time")
        try reader.expectEnd(of: "HEARTBEAT")
    }
}

/// `CLUSTER_STATUS`, topic `$status`: every node's progress, as the coordinator sees it.
///
/// Frames: `["$status"] [header] [JSON ClusterStatus]`.
@_spi(Wire) public struct ClusterStatusMessage: Sendable, Equatable {
    public var status: ClusterStatus

    public init(status: ClusterStatus) {
        self.status = status
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 4)
        WireHeader.write(.clusterStatus, into: &header)
        return [Array(ControlTopic.status.utf8), header.bytes, JSONFrame.encode(status)]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 3, for: "CLUSTER_STATUS")
        _ = try WireHeader.read(frames[1], expecting: .clusterStatus)
        status = try JSONFrame.decode(ClusterStatus.self, from: frames[2], in: "CLUSTER_STATUS")
    }
}

/// `ALARM`, topic `$alarm`: something an operator must look at, such as a divergence.
///
/// Frames: `["$alarm"] [header] [JSON Alarm]`.
@_spi(Wire) public struct AlarmMessage: Sendable, Equatable {
    public var alarm: Alarm

    public init(alarm: Alarm) {
        self.alarm = alarm
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 4)
        WireHeader.write(.alarm, into: &header)
        return [Array(ControlTopic.alarm.utf8), header.bytes, JSONFrame.encode(alarm)]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 3, for: "ALARM")
        _ = try WireHeader.read(frames[1], expecting: .alarm)
        alarm = try JSONFrame.decode(Alarm.self, from: frames[2], in: "ALARM")
    }
}

