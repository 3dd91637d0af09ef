/// A snapshot's bytes: the records of a SNAPSHOT_CHUNK body, every instance in one.
enum SnapshotCodec {
    static func encode(_ instances: [SnapshotChunkMessage.Instance]) -> [UInt8] {
        SnapshotChunkMessage(request: 0, seq: 0, epoch: 0, chunk: 0, isLast: true, instances: instances).frames[1]
    }

    static func decode(_ bytes: [UInt8]) throws -> [SnapshotChunkMessage.Instance] {
        let header = SnapshotChunkMessage(request: 0, seq: 0, epoch: 0, chunk: 0, isLast: true, instances: []).frames[0]
        return try SnapshotChunkMessage(frames: [header, bytes]).instances
    }
}
