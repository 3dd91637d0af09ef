/// `SNAPSHOT_CHUNK`: part of a snapshot of every instance's state at `seq`.
///
/// Frames: `[header request:u64 seq:u64 epoch:u32 chunk:u32 last:u8] [records: (len:u32,
/// address:short-string, last-seq:u64, [version], [ownership], state JSON)*]`. After the last chunk, apply entries from `seq + 1`. The
/// last chunk of a snapshot a standby coordinator asked for has a third frame, the sessions the
/// duplicate table remembers at `seq` (``sessionsFrame(_:)``).
@_spi(Wire) public struct SnapshotChunkMessage: Sendable, Equatable {
    public struct Instance: Sendable, Equatable {
        public var address: String
        /// The seq of the last entry applied to this instance.
        public var lastSeq: UInt64
        /// The state, as JSON.
        public var state: [UInt8]
        /// Who may run the instance's effects (``EffectOwner``), and the seq of its last takeover (0:
        /// none): what the log taught every replica about its effects.
        public var ownership: Ownership
        /// The version of the flow whose build wrote the state (`ReplicatedFlow.version`).
        ///
        /// In a record, after the last seq, only when it is not 1: `0x01 version:u16`. A state is
        /// JSON, which never starts with that byte, so a record without it (every record written
        /// before versions) reads as version 1.
        public var stateVersion: UInt16

        public init(address: String, lastSeq: UInt64, state: [UInt8], ownership: Ownership = Ownership(), stateVersion: UInt16 = 1) {
            self.address = address
            self.lastSeq = lastSeq
            self.state = state
            self.ownership = ownership
            self.stateVersion = stateVersion
        }

        static let versionMarker: UInt8 = 1
    }

    /// An instance's effects as every replica knows them from the log.
    ///
    /// In a record, between the last seq and the state, only when there is something to say:
    /// `0x00 fence:u64 owners:u8 (node:u32 session:u64)* ids:u16 (type:short-string
    /// description:short-string node:u32 session:u64)*`. A state is JSON, which never starts
    /// with a zero byte, so a record without it (every record before takeovers existed) reads as
    /// no owners and no fence. A continuation record (``SnapshotChunking``) never has one.
    public struct Ownership: Sendable, Equatable {
        /// The processes whose effects of the instance may be running: each started async work
        /// for it (or took it over) since its last takeover or cancel of every effect.
        public var owners: [EffectOwner] = []
        /// The seq of the instance's last takeover: effects' submissions under an older term are
        /// refused.
        public var fence: UInt64 = 0
        /// The cancel ids (typed) under which work started and no cancel has stopped since, each
        /// with the process that runs it: a takeover resumes only work under these (or without
        /// an id), so a cancelled effect is never started again.
        public var workIDs: [WorkID] = []

        /// A cancel id that marks work, and who runs that work.
        public struct WorkID: Sendable, Equatable {
            public var id: CancelTarget
            public var owner: EffectOwner

            public init(_ id: CancelTarget, owner: EffectOwner) {
                self.id = id
                self.owner = owner
            }
        }

        public init(owners: [EffectOwner] = [], fence: UInt64 = 0, workIDs: [WorkID] = []) {
            self.owners = owners
            self.fence = fence
            self.workIDs = workIDs
        }

        var isEmpty: Bool { owners.isEmpty && fence == 0 && workIDs.isEmpty }

        func encode(into writer: inout ByteWriter) {
            guard !isEmpty else { return }
            writer.write(0 as UInt8)
            writer.write(fence)
            writer.write(UInt8(owners.count))
            for owner in owners {
                writer.write(owner.node)
                writer.write(owner.session)
            }
            writer.write(UInt16(workIDs.count))
            for work in workIDs {
                guard case .typed(let type, let description) = work.id else { continue }
                writer.writeShortString(type)
                writer.writeShortString(description)
                writer.write(work.owner.node)
                writer.write(work.owner.session)
            }
        }

        init(from record: inout ByteReader) throws {
            guard record.peekUInt8() == 0 else { return }
            _ = try record.readUInt8("ownership marker")
            fence = try record.readUInt64("fence")
            let count = try record.readUInt8("owner count")
            for _ in 0..<count {
                owners.append(EffectOwner(node: try record.readUInt32("owner node"), session: try record.readUInt64("owner session")))
            }
            let ids = try record.readUInt16("work id count")
            for _ in 0..<ids {
                let id = CancelTarget.typed(type: try record.readShortString("work id type"), description: try record.readShortString("work id"))
                workIDs.append(WorkID(id, owner: EffectOwner(node: try record.readUInt32("work owner node"), session: try record.readUInt64("work owner session"))))
            }
        }
    }

    public var request: UInt64
    public var seq: UInt64
    public var epoch: UInt32
    public var chunk: UInt32
    public var isLast: Bool
    public var instances: [Instance]
    /// The sessions the coordinator's duplicate table remembers at ``seq``: on the last chunk,
    /// for a standby coordinator only.
    var sessions: [DedupTable.Remembered] = []

    public init(request: UInt64, seq: UInt64, epoch: UInt32, chunk: UInt32, isLast: Bool, instances: [Instance]) {
        self.request = request
        self.seq = seq
        self.epoch = epoch
        self.chunk = chunk
        self.isLast = isLast
        self.instances = instances
    }

    public var frames: [[UInt8]] {
        Self.frames(
            request: request, seq: seq, epoch: epoch, chunk: chunk, isLast: isLast, records: Self.recordsFrame(instances),
            sessions: sessions.isEmpty ? [] : Self.sessionsFrame(sessions)
        )
    }

    /// A chunk's frames around its records frame and, if not empty, its sessions frame, as they
    /// are (a saved snapshot's bytes: ``SnapshotRecords``).
    static func frames(request: UInt64, seq: UInt64, epoch: UInt32, chunk: UInt32, isLast: Bool, records: [UInt8], sessions: [UInt8]) -> [[UInt8]] {
        var header = ByteWriter(capacity: 32)
        WireHeader.write(.snapshotChunk, into: &header)
        header.write(request)
        header.write(seq)
        header.write(epoch)
        header.write(chunk)
        header.write(isLast ? 1 as UInt8 : 0)
        return sessions.isEmpty ? [header.bytes, records] : [header.bytes, records, sessions]
    }

    /// The records frame of `instances`.
    static func recordsFrame(_ instances: [Instance]) -> [UInt8] {
        var body = ByteWriter(capacity: instances.reduce(0) { $0 + $1.state.count + $1.address.utf8.count + 16 })
        for instance in instances {
            writeRecord(address: instance.address.utf8, lastSeq: instance.lastSeq, stateVersion: instance.stateVersion, into: &body) { writer in
                instance.ownership.encode(into: &writer)
                writer.write(contentsOf: instance.state)
            }
        }
        return body.bytes
    }

    /// One record of a records frame: its length, the address, the last seq and the state's
    /// version when it is not 1, then what `rest` writes: the ownership and the state.
    static func writeRecord(
        address: some Collection<UInt8>, lastSeq: UInt64, stateVersion: UInt16, into body: inout ByteWriter, _ rest: (inout ByteWriter) -> Void
    ) {
        body.writeLengthPrefixed { writer in
            writer.write(UInt16(address.count))
            writer.write(contentsOf: address)
            writer.write(lastSeq)
            if stateVersion != 1, !address.isEmpty {
                writer.write(Instance.versionMarker)
                writer.write(stateVersion)
            }
            rest(&writer)
        }
    }

    public init(frames: [[UInt8]]) throws {
        if frames.count != 3 { try expectFrames(frames, 2, for: "SNAPSHOT_CHUNK") }
        var (_, reader) = try WireHeader.read(frames[0], expecting: .snapshotChunk)
        request = try reader.readUInt64("request")
        seq = try reader.readUInt64("seq")
        epoch = try reader.readUInt32("epoch")
        chunk = try reader.readUInt32("chunk")
        isLast = try reader.readUInt8("last") != 0
        try reader.expectEnd(of: "SNAPSHOT_CHUNK's header")
        instances = try Self.instances(inRecords: frames[1])
        if frames.count == 3 { sessions = try Self.sessions(from: frames[2]) }
    }

    /// The instances of a SNAPSHOT_CHUNK's records frame (also a snapshot file's records:
    /// ``SnapshotCodec``). Their layout is the same in every protocol version this build reads.
    static func instances(inRecords frame: [UInt8]) throws -> [Instance] {
        var body = ByteReader(frame, context: "SNAPSHOT_CHUNK records")
        return try body.mapRecords("instance") { record in
            let address = try record.readShortString("address")
            let lastSeq = try record.readUInt64("last seq")
            // A continuation (empty address) is a piece of a state, whatever byte it starts with.
            var version: UInt16 = 1
            if !address.isEmpty, record.peekUInt8() == Instance.versionMarker {
                _ = try record.readUInt8("version marker")
                version = try record.readUInt16("state version")
                guard version >= 1 else { throw ProtocolError(.malformed, "a state's version is 1 or more; got 0") }
            }
            let ownership = address.isEmpty ? Ownership() : try Ownership(from: &record)
            let state = record.readRest()
            // The blocks before a state are told from it by its first byte, which for JSON is never
            // 0 or 1: a state that starts so would read as a block once written again.
            if !address.isEmpty, let first = state.first, first <= Instance.versionMarker {
                throw ProtocolError(.malformed, "a state is JSON, which never starts with byte \(first)")
            }
            return Instance(address: address, lastSeq: lastSeq, state: state, ownership: ownership, stateVersion: version)
        }
    }
}
