import Foundation

/// The table that finds a record at rest by its address: open addressing with linear probing over
/// ``RestingInstances/slots``, each holding a record's place / 8 + 1, and beside each its
/// address's tag (``RestingInstances/tags``): a probe reads the record's address in its chunk,
/// a cache miss in an arena of 60 MB, only when the tags agree (one time in 256 otherwise).
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

    /// The top byte of an address's hash (the slot comes from its low bits).
    static func tag(_ hash: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: hash >> 56)
    }

    func addressHash(at place: Int) -> Int {
        let offset = place % chunkBytes
        return chunks[place / chunkBytes].withUnsafeBytes {
            Self.hash(UnsafeRawBufferPointer(rebasing: $0[(offset + Self.header)...].prefix(Int($0[offset + 1]) + 1)))
        }
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
        let tag = Self.tag(hash)
        var slot = hash & mask
        while slots[slot] != 0 {
            guard tags[slot] == tag else {
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
        let mask = slots.count - 1
        var slot = hash & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = UInt32(place / 8 + 1)
        tags[slot] = Self.tag(hash)
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
            let home = addressHash(at: Int(slots[next] - 1) * 8) & mask
            // The record at `next` may move to `hole` unless its home lies cyclically in (hole, next].
            let stays = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !stays {
                slots[hole] = slots[next]
                tags[hole] = tags[next]
                hole = next
            }
        }
        slots[hole] = 0
    }

    /// - Parameter capacity: A power of two (the probes mask with it).
    func rebuildSlots(capacity: Int) {
        var capacity = max(16, capacity)
        while count * 2 > capacity { capacity *= 2 }
        slots = [UInt32](repeating: 0, count: capacity)
        tags = [UInt8](repeating: 0, count: capacity)
        forEachPlace { place in
            if chunks[place / chunkBytes][place % chunkBytes] & Self.woken == 0 { fill(place: place, hash: addressHash(at: place)) }
        }
    }
}
