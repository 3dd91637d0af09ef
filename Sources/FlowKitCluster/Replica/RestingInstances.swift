import FlowKitCore
import Foundation

/// The instances a ``ReplicaSet`` holds at rest: restored from a snapshot and not used since, each
/// kept as the snapshot had it (its address, last seq, state's JSON, effects' owners and, once
/// hashed, its term in the combined digest) in one arena of bytes, found through a table of
/// offsets. An
/// instance object cost a joining node about 500 bytes and 2.3 s of its loop for a million;
/// a record costs its bytes, about 40 beyond the address and the state, and an append.
///
/// An instance is woken (``take(_:)``) when it is first used, and its record is left behind as
/// dead bytes, reclaimed when they are most of the arena. Records restored but not hashed yet are
/// handed out for hashing in arena order (``takeUnhashed(limit:)``). Not thread-safe.
final class RestingInstances {
    /// What a record holds.
    struct Record {
        let address: String
        let lastSeq: UInt64
        /// Who may run its effects, elsewhere, and its last takeover.
        let ownership: SnapshotChunkMessage.Ownership
        /// Its term in the combined digest, once hashed: the digest describes `lastSeq`.
        let term: DigestAccumulator.Term?
        let state: [UInt8]
    }

    /// A record handed out for hashing: where it is, to set its term when the hash is back.
    struct Unhashed {
        let place: Int
        let address: String
        let lastSeq: UInt64
        let state: [UInt8]
    }

    /// Records back to back, each at a multiple of 8 bytes: flags (1), the address's length - 1
    /// (1), the state's length (4), the ownership's (4), last seq (8), term (16), the address, the
    /// state, the ownership (as a snapshot record has it; nothing when empty).
    private var arena: [UInt8] = []
    /// Open addressing with linear probing: each slot holds a record's offset / 8 + 1; 0 is empty.
    private var slots = [UInt32](repeating: 0, count: 16)
    private(set) var count = 0
    /// The arena's length, dead records included.
    var arenaBytes: Int { arena.count }
    /// Bytes of woken records, reclaimed when they are more than half the arena.
    private var deadBytes = 0
    /// Records not handed out for hashing yet, and where the next may be (all before it are).
    private(set) var unhashed = 0
    private var hashCursor = 0

    static let woken: UInt8 = 1
    /// Hashed, or handed out for hashing.
    static let handedOut: UInt8 = 2
    static let hashed: UInt8 = 4
    static let header = 34
    static let lastSeqAt = 10
    static let termAt = 18

    /// Makes room for `records` more records of about `bytes` in all, so that a restore of a
    /// million neither rebuilds the table as it doubles nor moves the arena as it grows.
    func reserve(records: Int, bytes: Int) {
        arena.reserveCapacity(arena.count + bytes)
        var capacity = slots.count
        while (count + records) * 2 > capacity { capacity *= 2 }
        if capacity > slots.count { rebuildSlots(capacity: capacity) }
    }

    /// Keeps an instance at rest, replacing a record of the same address. Its term, when given,
    /// describes `lastSeq`; without one it waits to be hashed.
    ///
    /// - Returns: The record it replaced, if any.
    @discardableResult
    func insert(
        address: String, lastSeq: UInt64, ownership: SnapshotChunkMessage.Ownership, term: DigestAccumulator.Term?, state: [UInt8]
    ) -> Record? {
        let replaced = take(address)
        if (count + 1) * 2 > slots.count { rebuildSlots(capacity: slots.count * 2) }
        let offset = arena.count
        precondition(offset / 8 < Int(UInt32.max), "more instances at rest than an arena of 32 GiB holds")
        var owners = ByteWriter(capacity: 0)
        ownership.encode(into: &owners)
        var address = address
        address.withUTF8 { addressBytes in
            precondition((1...256).contains(addressBytes.count), "an address is 1 to 256 bytes")
            arena.append(term == nil ? 0 : Self.hashed | Self.handedOut)
            arena.append(UInt8(addressBytes.count - 1))
            append(UInt32(state.count))
            append(UInt32(owners.bytes.count))
            append(lastSeq)
            append(term?.high ?? 0)
            append(term?.low ?? 0)
            arena.append(contentsOf: addressBytes)
        }
        arena.append(contentsOf: state)
        arena.append(contentsOf: owners.bytes)
        arena.append(contentsOf: repeatElement(0, count: (8 - arena.count % 8) % 8))
        slots[probe(forRecordAt: offset)] = UInt32(offset / 8 + 1)
        count += 1
        if term == nil { unhashed += 1 }
        return replaced
    }

    /// Wakes an instance: its record, which leaves the table; nil when none rests at `address`.
    func take(_ address: String) -> Record? {
        guard count > 0 else { return nil }
        var address = address
        guard let slot = address.withUTF8({ find(UnsafeRawBufferPointer($0)) }) else { return nil }
        let offset = Int(slots[slot] - 1) * 8
        let record = read(at: offset)
        let flags = arena[offset]
        arena[offset] = flags | Self.woken
        if flags & Self.handedOut == 0 { unhashed -= 1 }
        deadBytes += size(at: offset)
        count -= 1
        removeSlot(slot)
        return record
    }

    func contains(_ address: String) -> Bool {
        guard count > 0 else { return false }
        var address = address
        return address.withUTF8 { find(UnsafeRawBufferPointer($0)) } != nil
    }

    /// Every record at rest, in arena order.
    func forEach(_ body: (Record) -> Void) {
        frozen.forEach(body)
    }

    /// The records at rest now, to read on another thread: the arena itself, shared until this
    /// set next changes it (then copied once, as an array is), not a value per record.
    var frozen: Frozen { Frozen(arena: arena, count: count) }

    /// The address and ownership of every record at rest with one (owners or a fence).
    func forEachOwned(_ body: (String, SnapshotChunkMessage.Ownership) -> Void) {
        var offset = 0
        while offset < arena.count {
            if arena[offset] & Self.woken == 0, load(UInt32.self, at: offset + 6) > 0 {
                let record = read(at: offset)
                body(record.address, record.ownership)
            }
            offset += size(at: offset)
        }
    }

    /// Forgets every record.
    func removeAll() {
        arena = []
        slots = [UInt32](repeating: 0, count: 16)
        count = 0
        deadBytes = 0
        unhashed = 0
        hashCursor = 0
    }

    // MARK: Hashing a restore

    /// Hands out up to `limit` records not hashed yet, oldest first; give each one's term back
    /// with ``setTerm(_:at:lastSeq:)`` (one that does not hash stays without a term).
    func takeUnhashed(limit: Int) -> [Unhashed] {
        var taken: [Unhashed] = []
        while taken.count < limit, unhashed > 0, hashCursor < arena.count {
            let offset = hashCursor
            hashCursor += size(at: offset)
            guard arena[offset] & (Self.woken | Self.handedOut) == 0 else { continue }
            arena[offset] |= Self.handedOut
            unhashed -= 1
            let record = read(at: offset)
            taken.append(Unhashed(place: offset, address: record.address, lastSeq: record.lastSeq, state: record.state))
        }
        return taken
    }

    /// Sets the term of a record handed out for hashing; false when it was woken meanwhile (or the
    /// records were replaced: `lastSeq` no longer matches).
    func setTerm(_ term: DigestAccumulator.Term, at place: Int, lastSeq: UInt64) -> Bool {
        guard place + Self.header <= arena.count, arena[place] & (Self.woken | Self.hashed) == 0,
            arena[place] & Self.handedOut != 0, load(UInt64.self, at: place + Self.lastSeqAt) == lastSeq
        else { return false }
        arena[place] |= Self.hashed
        store(term.high, at: place + Self.termAt)
        store(term.low, at: place + Self.termAt + 8)
        return true
    }

    /// Reclaims the dead records' bytes when they are most of the arena and no record is out for
    /// hashing (the places handed out stay valid until their terms are back).
    func compactIfWorthIt(hashingOut: Bool) {
        guard !hashingOut, unhashed == 0, deadBytes > 1 << 20, deadBytes * 2 > arena.count else { return }
        var kept: [UInt8] = []
        kept.reserveCapacity(arena.count - deadBytes)
        var offset = 0
        while offset < arena.count {
            let size = size(at: offset)
            if arena[offset] & Self.woken == 0 { kept.append(contentsOf: arena[offset..<(offset + size)]) }
            offset += size
        }
        arena = kept
        deadBytes = 0
        hashCursor = arena.count
        rebuildSlots(capacity: slots.count)
    }

    // MARK: The arena

    private func size(at offset: Int) -> Int { Self.size(in: arena, at: offset) }

    private func read(at offset: Int) -> Record { Self.read(in: arena, at: offset) }

    private func load<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T { Self.load(T.self, in: arena, at: offset) }

    private func store<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        arena.withUnsafeMutableBytes { $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
    }

    private func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { arena.append(contentsOf: $0) }
    }

    // MARK: The table

    private static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        return hasher.finalize()
    }

    private func addressHash(at offset: Int) -> Int {
        arena.withUnsafeBytes { Self.hash(UnsafeRawBufferPointer(rebasing: $0[(offset + Self.header)...].prefix(Int($0[offset + 1]) + 1))) }
    }

    /// The slot of the record whose address is `address`.
    private func find(_ address: UnsafeRawBufferPointer) -> Int? {
        let mask = slots.count - 1
        var slot = Self.hash(address) & mask
        return arena.withUnsafeBytes { arena in
            while slots[slot] != 0 {
                let offset = Int(slots[slot] - 1) * 8
                if Int(arena[offset + 1]) + 1 == address.count,
                    memcmp(arena.baseAddress! + offset + Self.header, address.baseAddress!, address.count) == 0
                {
                    return slot
                }
                slot = (slot + 1) & mask
            }
            return nil
        }
    }

    /// The first free slot on the probe path of the record at `offset`.
    private func probe(forRecordAt offset: Int) -> Int {
        let mask = slots.count - 1
        var slot = addressHash(at: offset) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        return slot
    }

    /// Empties `slot`, moving back the records after it whose probe paths cross it, so that no
    /// lookup stops short of its record (deletion without tombstones).
    private func removeSlot(_ slot: Int) {
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
                hole = next
            }
        }
        slots[hole] = 0
    }

    /// - Parameter capacity: A power of two (the probes mask with it).
    private func rebuildSlots(capacity: Int) {
        var capacity = max(16, capacity)
        while count * 2 > capacity { capacity *= 2 }
        slots = [UInt32](repeating: 0, count: capacity)
        var offset = 0
        while offset < arena.count {
            if arena[offset] & Self.woken == 0 { slots[probe(forRecordAt: offset)] = UInt32(offset / 8 + 1) }
            offset += size(at: offset)
        }
    }
}
