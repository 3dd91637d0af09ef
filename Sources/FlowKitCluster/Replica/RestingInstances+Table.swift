import Foundation

/// The table that finds a record at rest by its address: open addressing with linear probing over
/// ``RestingInstances/slots``, each holding a record's place / 8 + 1, and beside each the low 32
/// bits of its address's hash (``RestingInstances/hashes``). A probe reads the record's address
/// in its chunk, a cache miss in an arena of 60 MB, only when those agree; a removal's backward
/// shift and a rebuild find each record's home slot there, without reading the arena at all
/// (with a tag byte instead, the shift hashed each following record's address again, from the
/// arena: 2 % of a node's loop in a step that woke a million resting instances).
extension RestingInstances {
    static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    static func hash(_ address: String) -> Int {
        var address = address
        return address.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    /// What a slot keeps of an address's hash: its home slot is these bits under the table's mask.
    static func slotHash(_ hash: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: hash)
    }

    /// The record at rest at `address`, left where it is; nil when none rests there.
    func record(at address: String) -> Record? {
        guard count > 0 else { return nil }
        var address = address
        guard let slot = address.withUTF8({ find(UnsafeRawBufferPointer($0)) }) else { return nil }
        return read(at: Int(slots[slot] - 1) * 8)
    }

    func contains(_ address: String) -> Bool {
        guard count > 0 else { return false }
        var address = address
        return address.withUTF8 { find(UnsafeRawBufferPointer($0)) } != nil
    }

    /// The slot of the record whose address is `address`.
    func find(_ address: UnsafeRawBufferPointer, hash: Int? = nil) -> Int? {
        let mask = slots.count - 1
        let hash = hash ?? Self.hash(address)
        let slotHash = Self.slotHash(hash)
        var slot = hash & mask
        while slots[slot] != 0 {
            guard hashes[slot] == slotHash else {
                slot = (slot + 1) & mask
                continue
            }
            let place = Int(slots[slot] - 1) * 8
            let offset = place % chunkBytes
            let matches = chunks[place / chunkBytes].withUnsafeBytes { chunk in
                Int(chunk[offset + 1]) + 1 == address.count && memcmp(chunk.baseAddress! + offset + Self.header, address.baseAddress!, address.count) == 0
            }
            if matches { return slot }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Puts the record at `place`, whose address hashes to `hash`, in the first free slot on its
    /// probe path.
    func fill(place: Int, hash: Int) {
        fill(slot: UInt32(place / 8 + 1), slotHash: Self.slotHash(hash))
    }

    private func fill(slot value: UInt32, slotHash: UInt32) {
        let mask = slots.count - 1
        var slot = Int(slotHash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = value
        hashes[slot] = slotHash
    }

    /// The slot of the record at `place`.
    func slot(of record: ArraySlice<UInt8>, at place: Int) -> Int {
        let slot = record.withUnsafeBytes { bytes in
            find(UnsafeRawBufferPointer(rebasing: bytes[Self.header..<(Self.header + Int(bytes[1]) + 1)]))
        }
        guard let slot, Int(slots[slot] - 1) * 8 == place else { preconditionFailure("a record at rest is missing from the table") }
        return slot
    }

    /// Empties `slot`, moving back the records after it whose probe paths cross it, so that no
    /// lookup stops short of its record (deletion without tombstones).
    func removeSlot(_ slot: Int) {
        let mask = slots.count - 1
        var hole = slot
        var next = slot
        while true {
            next = (next + 1) & mask
            guard slots[next] != 0 else { break }
            let home = Int(hashes[next]) & mask
            // The record at `next` may move to `hole` unless its home lies cyclically in (hole, next].
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                hashes[hole] = hashes[next]
                hole = next
            }
        }
        slots[hole] = 0
    }

    /// Moves every record's slot to a table of `capacity` slots, from the hashes the slots keep.
    /// - Parameter capacity: A power of two (the probes mask with it), at most 2³² (a home slot is
    ///   a slot hash under the mask).
    func rebuildSlots(capacity: Int) {
        var capacity = max(16, capacity)
        while count * 2 > capacity { capacity *= 2 }
        precondition(capacity <= 1 << 32, "more instances at rest than a table of 2^32 slots holds")
        let (oldSlots, oldHashes) = (slots, hashes)
        slots = [UInt32](repeating: 0, count: capacity)
        hashes = [UInt32](repeating: 0, count: capacity)
        for (slot, slotHash) in zip(oldSlots, oldHashes) where slot != 0 { fill(slot: slot, slotHash: slotHash) }
    }
}
