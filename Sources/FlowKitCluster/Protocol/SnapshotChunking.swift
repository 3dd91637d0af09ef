/// How a snapshot of every instance travels in SNAPSHOT_CHUNK messages of bounded size, however
/// large one instance's state grows.
///
/// Chunks hold whole instances while they fit; a state larger than a chunk is split: its first
/// piece travels in an instance record as usual, and each further piece in a **continuation
/// record** that follows it, an instance record with an empty address and `lastSeq` 0 (no address
/// is empty, so nothing else reads that way). A receiver appends a continuation's bytes to the
/// state of the record before it, across chunk boundaries (docs/PROTOCOL.md, SNAPSHOT_CHUNK).
enum SnapshotChunking {
    /// Splits `instances` into chunks of about `maxChunkBytes` of records each; a state larger
    /// than that is cut into pieces of at most `maxChunkBytes`.
    static func chunks(_ instances: [SnapshotChunkMessage.Instance], maxChunkBytes: Int) -> [[SnapshotChunkMessage.Instance]] {
        precondition(maxChunkBytes > 0)
        var chunks: [[SnapshotChunkMessage.Instance]] = []
        var chunk: [SnapshotChunkMessage.Instance] = []
        var bytes = 0
        func add(_ record: SnapshotChunkMessage.Instance) {
            let size = record.state.count + record.address.utf8.count + 14 + (record.ownership.isEmpty ? 0 : 10 + 12 * record.ownership.owners.count)
                + (record.stateVersion == 1 ? 0 : 3)
            if !chunk.isEmpty, bytes + size > maxChunkBytes {
                chunks.append(chunk)
                chunk = []
                bytes = 0
            }
            chunk.append(record)
            bytes += size
        }
        for instance in instances {
            var pieces = stride(from: 0, to: max(instance.state.count, 1), by: maxChunkBytes).map {
                Array(instance.state[$0..<min($0 + maxChunkBytes, instance.state.count)])
            }
            if pieces.isEmpty { pieces = [[]] }
            add(.init(address: instance.address, lastSeq: instance.lastSeq, state: pieces[0], ownership: instance.ownership, stateVersion: instance.stateVersion))
            for piece in pieces.dropFirst() { add(.init(address: "", lastSeq: 0, state: piece)) }
        }
        chunks.append(chunk)
        return chunks
    }

    /// Appends a chunk's records to the instances received so far, joining continuations.
    ///
    /// - Throws: `malformed` for a continuation with nothing before it.
    static func append(_ records: [SnapshotChunkMessage.Instance], to instances: inout [SnapshotChunkMessage.Instance]) throws {
        for record in records {
            guard record.address.isEmpty else {
                instances.append(record)
                continue
            }
            guard !instances.isEmpty else {
                throw ProtocolError(.malformed, "a snapshot continuation record (empty address) must follow an instance record")
            }
            instances[instances.count - 1].state.append(contentsOf: record.state)
        }
    }
}
