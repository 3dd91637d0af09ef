/// A saved snapshot's bytes (``SnapshotCodec``) as the sync socket serves them: its instance
/// records are already SNAPSHOT_CHUNK records, so chunks are cut from them where records end, and
/// its sessions block is already a SNAPSHOT_CHUNK's sessions frame. Nothing is decoded but the
/// records' lengths.
///
/// Decoding a million instances into values and encoding them again took the coordinator about
/// 0.7 s of the 2.2 s a node joining behind them waited.
struct SnapshotRecords: Sendable {
    let bytes: [UInt8]
    /// Where the instance records end (the sessions block, if any, follows).
    let recordsEnd: Int
    /// The sessions frame, if the snapshot remembers any.
    let sessions: Range<Int>?
    /// How many instance records it holds.
    let count: Int

    /// - Throws: `malformed` when a record's length runs past the records.
    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        let layout = try SnapshotCodec.layout(bytes)
        recordsEnd = layout.recordsEnd
        sessions = layout.sessions
        var count = 0
        var at = 0
        while at < recordsEnd {
            at += try Self.recordLength(in: bytes, at: at, end: recordsEnd)
            count += 1
        }
        self.count = count
    }

    /// The records frame of each chunk, in order: whole records up to about `maxChunkBytes`
    /// each, as they lie; a record larger than that alone, decoded and split by
    /// ``SnapshotChunking`` into continuation records.
    func chunks(maxChunkBytes: Int) throws -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var start = 0
        var at = 0
        func cut() {
            if at > start { chunks.append(Array(bytes[start..<at])) }
        }
        while at < recordsEnd {
            let length = try Self.recordLength(in: bytes, at: at, end: recordsEnd)
            if length - 4 > maxChunkBytes {
                cut()
                let instances = try SnapshotChunkMessage.instances(inRecords: Array(bytes[at..<(at + length)]))
                for pieces in SnapshotChunking.chunks(instances, maxChunkBytes: maxChunkBytes) {
                    chunks.append(SnapshotChunkMessage.recordsFrame(pieces))
                }
                at += length
                start = at
                continue
            }
            if at > start, at + length - start > maxChunkBytes { cut(); start = at }
            at += length
        }
        cut()
        return chunks.isEmpty ? [[]] : chunks
    }

    /// The sessions frame as it lies, empty when it remembers none.
    var sessionsFrame: [UInt8] { sessions.map { Array(bytes[$0]) } ?? [] }

    /// The length of the record at `at`, its 4-byte length included.
    private static func recordLength(in bytes: [UInt8], at: Int, end: Int) throws -> Int {
        guard end - at >= 4 else { throw ProtocolError(.malformed, "a snapshot record's length is cut off at byte \(at)") }
        let length = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        guard length <= end - at - 4 else { throw ProtocolError(.malformed, "a snapshot record at byte \(at) runs past the records (\(length) bytes)") }
        return length + 4
    }
}
