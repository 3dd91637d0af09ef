/// A coordinator snapshot's bytes: the records of a SNAPSHOT_CHUNK body, every instance in one,
/// then (when there are any) the sessions its duplicate table remembers, as a SNAPSHOT_CHUNK's
/// sessions frame, its length and the mark `FKSS` last. A snapshot written before sessions were
/// kept ends with a record, which never ends with that mark and a length that fits.
enum SnapshotCodec {
    static let sessionsMark: [UInt8] = Array("FKSS".utf8)

    static func encode(_ instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered] = []) -> [UInt8] {
        var bytes = SnapshotChunkMessage(request: 0, seq: 0, epoch: 0, chunk: 0, isLast: true, instances: instances).frames[1]
        guard !sessions.isEmpty else { return bytes }
        let block = SnapshotChunkMessage.sessionsFrame(sessions)
        var trailer = ByteWriter(capacity: 8)
        trailer.write(UInt32(block.count))
        bytes += block + trailer.bytes + sessionsMark
        return bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> (instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered]) {
        var records = bytes[...]
        var sessions: [DedupTable.Remembered] = []
        if bytes.count >= 8, Array(bytes.suffix(4)) == sessionsMark {
            var reader = ByteReader(Array(bytes.suffix(8).prefix(4)), context: "snapshot sessions length")
            let length = Int(try reader.readUInt32("length"))
            guard length <= bytes.count - 8 else { throw ProtocolError(.malformed, "a snapshot's sessions block is longer than the snapshot") }
            let start = bytes.count - 8 - length
            sessions = try SnapshotChunkMessage.sessions(from: Array(bytes[start..<(bytes.count - 8)]))
            records = bytes[..<start]
        }
        return (try SnapshotChunkMessage.instances(inRecords: Array(records)), sessions)
    }
}
