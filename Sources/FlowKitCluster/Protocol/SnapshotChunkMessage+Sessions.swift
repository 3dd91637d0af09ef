extension SnapshotChunkMessage {
    /// `count:u32 (origin:u32 session:u64 watermark:u64 last-seq:u64 above:u32 (submission:u64 seq:u64)*)*`:
    /// for each session, every submission up to `watermark` was ordered, and those in `above`
    /// at their seqs.
    static func sessionsFrame(_ sessions: [DedupTable.Remembered]) -> [UInt8] {
        var writer = ByteWriter(capacity: 4 + sessions.reduce(0) { $0 + 32 + $1.above.count * 16 })
        writer.write(UInt32(sessions.count))
        for session in sessions {
            writer.write(session.origin)
            writer.write(session.session)
            writer.write(session.watermark)
            writer.write(session.lastSeq)
            writer.write(UInt32(session.above.count))
            for submitted in session.above {
                writer.write(submitted.id)
                writer.write(submitted.seq)
            }
        }
        return writer.bytes
    }

    static func sessions(from frame: [UInt8]) throws -> [DedupTable.Remembered] {
        var reader = ByteReader(frame, context: "SNAPSHOT_CHUNK sessions")
        let count = try reader.readUInt32("session count")
        var sessions: [DedupTable.Remembered] = []
        for _ in 0..<count {
            var session = DedupTable.Remembered(
                origin: try reader.readUInt32("origin"), session: try reader.readUInt64("session"),
                watermark: try reader.readUInt64("watermark"), lastSeq: try reader.readUInt64("last seq"), above: []
            )
            for _ in 0..<(try reader.readUInt32("submissions above")) {
                session.above.append(.init(id: try reader.readUInt64("submission"), seq: try reader.readUInt64("seq")))
            }
            sessions.append(session)
        }
        try reader.expectEnd(of: "SNAPSHOT_CHUNK sessions")
        return sessions
    }
}
