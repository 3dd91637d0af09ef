/// A coordinator snapshot's bytes: the records of a SNAPSHOT_CHUNK body, every instance in one,
/// then (when there are any) the sessions its duplicate table remembers, as a SNAPSHOT_CHUNK's
/// sessions frame, its length and the mark `FKSS` last. A snapshot written before sessions were
/// kept ends with a record, which never ends with that mark and a length that fits.
enum SnapshotCodec {
    static let sessionsMark: [UInt8] = Array("FKSS".utf8)

    static func encode(_ instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered] = []) -> [UInt8] {
        var bytes = SnapshotChunkMessage.recordsFrame(instances)
        guard !sessions.isEmpty else { return bytes }
        let block = SnapshotChunkMessage.sessionsFrame(sessions)
        var trailer = ByteWriter(capacity: 8)
        trailer.write(UInt32(block.count))
        bytes += block + trailer.bytes + sessionsMark
        return bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> (instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) {
        let layout = try layout(bytes)
        let sessions = try layout.sessions.map { try SnapshotChunkMessage.sessions(from: Array(bytes[$0])) } ?? []
        return (try SnapshotChunkMessage.instances(inRecords: Array(bytes[..<layout.recordsEnd])), sessions)
    }

    /// Where a snapshot's instance records end, and where its sessions frame lies, if it has one.
    static func layout(_ bytes: [UInt8]) throws -> (recordsEnd: Int, sessions: Range<Int>?) {
        guard bytes.count >= 8, bytes.suffix(4).elementsEqual(sessionsMark) else { return (bytes.count, nil) }
        var reader = ByteReader(Array(bytes.suffix(8).prefix(4)), context: "snapshot sessions length")
        let length = Int(try reader.readUInt32("length"))
        guard length <= bytes.count - 8 else { throw ProtocolError(.malformed, "a snapshot's sessions block is longer than the snapshot") }
        let start = bytes.count - 8 - length
        return (start, start..<(bytes.count - 8))
    }
}
