import FlowKitCore

extension RestingInstances {
    /// The records at rest at one moment, readable on any thread (``RestingInstances/frozen``): a
    /// snapshot of a node holding a million instances at rest takes this, not a million values
    /// made on the node's thread, which held it for a second.
    struct Frozen: Sendable {
        let chunks: [[UInt8]]
        /// How many records are at rest in it.
        let count: Int

        init(chunks: [[UInt8]], count: Int) {
            self.chunks = chunks
            self.count = count
        }

        /// Every record at rest, chunk by chunk.
        func forEach(_ body: (Record) -> Void) {
            forEachOffset { chunk, offset in body(RestingInstances.read(in: chunks[chunk], at: offset)) }
        }

        /// Calls `body` with the chunk and the offset there of every record at rest, chunk by chunk.
        func forEachOffset(_ body: (_ chunk: Int, _ offset: Int) -> Void) {
            for (index, chunk) in chunks.enumerated() {
                var offset = 0
                while offset < chunk.count {
                    if chunk[offset] & RestingInstances.woken == 0 { body(index, offset) }
                    offset += RestingInstances.size(in: chunk, at: offset)
                }
            }
        }

        /// The parts of the record at `offset` in `chunk` as they lie, without a copy, for as long
        /// as `body` runs: its address, its last seq, its state and its ownership (as a snapshot
        /// record has it: ``SnapshotChunkMessage/Ownership``; no bytes when empty).
        func withRecord<Result>(
            chunk: Int, offset: Int,
            _ body: (_ address: UnsafeRawBufferPointer, _ lastSeq: UInt64, _ state: UnsafeRawBufferPointer, _ ownership: UnsafeRawBufferPointer) throws -> Result
        ) rethrows -> Result {
            try chunks[chunk].withUnsafeBytes { arena in
                func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T { T(littleEndian: arena.loadUnaligned(fromByteOffset: offset, as: T.self)) }
                let stateStart = offset + RestingInstances.header + Int(arena[offset + 1]) + 1
                let stateEnd = stateStart + Int(load(UInt32.self, at: offset + 2))
                let ownershipEnd = stateEnd + Int(load(UInt32.self, at: offset + 6))
                return try body(
                    UnsafeRawBufferPointer(rebasing: arena[(offset + RestingInstances.header)..<stateStart]),
                    load(UInt64.self, at: offset + RestingInstances.lastSeqAt),
                    UnsafeRawBufferPointer(rebasing: arena[stateStart..<stateEnd]),
                    UnsafeRawBufferPointer(rebasing: arena[stateEnd..<ownershipEnd])
                )
            }
        }
    }

    // MARK: Reading the records

    /// The address and ownership of every record at rest with one (owners or a fence).
    func forEachOwned(_ body: (String, SnapshotChunkMessage.Ownership) -> Void) {
        forEachPlace { place in
            let (chunk, offset) = (place / chunkBytes, place % chunkBytes)
            guard chunks[chunk][offset] & Self.woken == 0, Self.load(UInt32.self, in: chunks[chunk], at: offset + 6) > 0 else { return }
            let record = read(at: place)
            body(record.address, record.ownership)
        }
    }

    /// Calls `body` with the place of every record, dead ones too, chunk by chunk.
    func forEachPlace(_ body: (Int) -> Void) {
        for chunk in chunks.indices {
            var offset = 0
            while offset < chunks[chunk].count {
                body(chunk * chunkBytes + offset)
                offset += Self.size(in: chunks[chunk], at: offset)
            }
        }
    }

    func read(at place: Int) -> Record { Self.read(in: chunks[place / chunkBytes], at: place % chunkBytes) }

    // MARK: Reading a record

    /// The length of the record at `offset`, padding included.
    static func size(in arena: [UInt8], at offset: Int) -> Int {
        let length = header + Int(arena[offset + 1]) + 1 + Int(load(UInt32.self, in: arena, at: offset + 2))
            + Int(load(UInt32.self, in: arena, at: offset + 6))
        return (length + 7) & ~7
    }

    static func read(in arena: [UInt8], at offset: Int) -> Record {
        let addressLength = Int(arena[offset + 1]) + 1
        let stateStart = offset + header + addressLength
        let stateEnd = stateStart + Int(load(UInt32.self, in: arena, at: offset + 2))
        let ownershipEnd = stateEnd + Int(load(UInt32.self, in: arena, at: offset + 6))
        var owners = ByteReader(arena, from: stateEnd, to: ownershipEnd, subject: .described("an instance at rest"))
        let isHashed = arena[offset] & hashed != 0
        return Record(
            address: String(decoding: arena[(offset + header)..<stateStart], as: UTF8.self),
            lastSeq: load(UInt64.self, in: arena, at: offset + lastSeqAt),
            // Written by the same code a moment before: it reads back.
            ownership: ownershipEnd > stateEnd ? (try? SnapshotChunkMessage.Ownership(from: &owners)) ?? .init() : .init(),
            term: isHashed
                ? DigestAccumulator.Term(high: load(UInt64.self, in: arena, at: offset + termAt), low: load(UInt64.self, in: arena, at: offset + termAt + 8))
                : nil,
            state: Array(arena[stateStart..<stateEnd])
        )
    }

    static func load<T: FixedWidthInteger>(_: T.Type, in arena: [UInt8], at offset: Int) -> T {
        arena.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}
