/// `SUBMIT`, node → coordinator: a batch of submissions from one session.
///
/// Frames: `[header origin:u32 session:u64] [records: (len:u32, submission record)*]`.
@_spi(Wire) public struct SubmitMessage: Sendable, Equatable {
    public var origin: UInt32
    public var session: UInt64
    public var submissions: [Submission]

    public init(origin: UInt32, session: UInt64, submissions: [Submission]) {
        self.origin = origin
        self.session = session
        self.submissions = submissions
    }

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 16)
        WireHeader.write(.submit, into: &header)
        header.write(origin)
        header.write(session)
        var records = ByteWriter(capacity: submissions.count * 64)
        for submission in submissions {
            records.writeLengthPrefixed { submission.encode(into: &$0) }
        }
        return [header.bytes, records.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "SUBMIT")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .submit)
        origin = try reader.readUInt32("origin")
        session = try reader.readUInt64("session")
        try reader.expectEnd(of: "SUBMIT's header")
        guard origin >= 1 else {
            throw ProtocolError(.malformed, "SUBMIT names origin 0; node ids start at 1")
        }
        var records = ByteReader(frames[1], context: "SUBMIT records", protocolVersion: reader.protocolVersion)
        submissions = try records.mapRecords("submission") { try Submission(from: &$0) }
        guard !submissions.isEmpty else { throw ProtocolError(.malformed, "a SUBMIT message carries at least one submission") }
    }
}

/// `ACK`, coordinator → node: what became of each submission of a batch.
///
/// Frames: `[header epoch:u32 head:u64] [acks: (submission:u64 seq:u64 status:u8 reason:u16)*]`.
@_spi(Wire) public struct AckMessage: Sendable, Equatable {
    public enum Status: UInt8, Sendable {
        /// Ordered now, at `seq`.
        case ordered = 0
        /// Ordered earlier; `seq` is its position when the coordinator still remembers it, else 0.
        case duplicate = 1
        /// Not ordered; `reason` says why. The node may retry later (disk full, overloaded).
        case refused = 2
    }

    public struct Ack: Sendable, Equatable {
        public var submission: UInt64
        public var seq: UInt64
        public var status: Status
        public var reason: ProtocolError.Code?

        public init(submission: UInt64, seq: UInt64, status: Status, reason: ProtocolError.Code? = nil) {
            self.submission = submission
            self.seq = seq
            self.status = status
            self.reason = reason
        }
    }

    public var epoch: UInt32
    /// The coordinator's last durable seq when it sent this.
    public var head: UInt64
    public var acks: [Ack]

    public init(epoch: UInt32, head: UInt64, acks: [Ack]) {
        self.epoch = epoch
        self.head = head
        self.acks = acks
    }

    static let ackSize = 19

    public var frames: [[UInt8]] {
        var header = ByteWriter(capacity: 16)
        WireHeader.write(.ack, into: &header)
        header.write(epoch)
        header.write(head)
        var body = ByteWriter(capacity: acks.count * Self.ackSize)
        for ack in acks {
            body.write(ack.submission)
            body.write(ack.seq)
            body.write(ack.status.rawValue)
            body.write(ack.reason?.rawValue ?? 0)
        }
        return [header.bytes, body.bytes]
    }

    public init(frames: [[UInt8]]) throws {
        try expectFrames(frames, 2, for: "ACK")
        var (_, reader) = try WireHeader.read(frames[0], expecting: .ack)
        epoch = try reader.readUInt32("epoch")
        head = try reader.readUInt64("head")
        try reader.expectEnd(of: "ACK's header")
        guard frames[1].count % Self.ackSize == 0 else {
            throw ProtocolError(.malformed, "ACK records are \(Self.ackSize) bytes each; got \(frames[1].count) bytes")
        }
        var body = ByteReader(frames[1], context: "ACK records")
        var acks: [Ack] = []
        while !body.isAtEnd {
            let submission = try body.readUInt64("submission")
            let seq = try body.readUInt64("seq")
            let rawStatus = try body.readUInt8("status")
            guard let status = Status(rawValue: rawStatus) else {
                throw ProtocolError(.malformed, "unknown ACK status \(rawStatus)")
            }
            let rawReason = try body.readUInt16("reason")
            acks.append(Ack(submission: submission, seq: seq, status: status, reason: ProtocolError.Code(rawValue: rawReason)))
        }
        self.acks = acks
    }
}
