import FlowKitCore

extension RestingInstances {
    /// The records at rest at one moment, readable on any thread (``RestingInstances/frozen``): a
    /// snapshot of a node holding a million instances at rest takes this, not a million values
    /// made on the node's thread, which held it for a second.
    struct Frozen: Sendable {
        fileprivate let arena: [UInt8]
        /// How many records are at rest in it.
        let count: Int

        init(arena: [UInt8], count: Int) {
            self.arena = arena
            self.count = count
        }

        /// Every record at rest, in arena order.
        func forEach(_ body: (Record) -> Void) {
            var offset = 0
            while offset < arena.count {
                if arena[offset] & RestingInstances.woken == 0 { body(RestingInstances.read(in: arena, at: offset)) }
                offset += RestingInstances.size(in: arena, at: offset)
            }
        }
    }

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
