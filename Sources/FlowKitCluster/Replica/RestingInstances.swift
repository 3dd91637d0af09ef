import FlowKitCore
import Foundation

/// The instances a ``ReplicaSet`` holds at rest: restored from a snapshot and not used since, each
/// kept as the snapshot had it (its address, last seq, state's JSON, effects' owners and, once
/// hashed, its term in the combined digest) in chunks of bytes, found through a table of places.
/// An instance object cost a joining node about 500 bytes and 2.3 s of its loop for a million;
/// a record costs its bytes, about 40 beyond the address and the state, and an append.
///
/// An instance is woken (``take(_:)``) when it is first used, and its record is left behind as
/// dead bytes. Records restored but not hashed yet are handed out for hashing in order
/// (``takeUnhashed(limit:)``). Not thread-safe.
///
/// Chunks, not one array: a snapshot takes the records as they are (``frozen``), sharing their
/// bytes, and the next change copies only the chunk it touches. With one array, the first instance
/// woken after a snapshot began copied every record (60 MB for a million) on the owner's thread, a
/// stall in each node and the coordinator at every snapshot; so did the array's growth and the
/// reclaiming of dead records. A chunk whose records are mostly dead is emptied by moving its live
/// ones to the chunk being filled (``compactIfWorthIt(hashingOut:)``), one chunk at a time.
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

    /// Records back to back in each chunk, each at a multiple of 8 bytes: flags (1), the address's
    /// length - 1 (1), the state's length (4), the ownership's (4), last seq (8), term (16), the
    /// address, the state, the ownership (as a snapshot record has it; nothing when empty). A
    /// record larger than ``chunkBytes`` has a chunk of its own. A record's place is its chunk's
    /// index × ``chunkBytes`` + its offset there.
    private(set) var chunks: [[UInt8]] = []
    /// Bytes of woken records in each chunk.
    private var deadBytes: [Int] = []
    /// The chunk records are appended to, if any; chunks emptied, to fill again.
    private var filling: Int?
    private var emptied: [Int] = []
    /// Chunks mostly dead, to empty (``compactIfWorthIt(hashingOut:)``).
    private var mostlyDead: Set<Int> = []
    /// The most bytes records fill a chunk with (a power of two).
    let chunkBytes: Int
    /// A bug the simulation plants (``InjectedBug/emptiedChunkLosesARecord``); never set in a process.
    var losesARecordWhenEmptying = false
    /// Open addressing with linear probing: each slot holds a record's place / 8 + 1; 0 is empty
    /// (RestingInstances+Table.swift).
    var slots = [UInt32](repeating: 0, count: 16)
    /// The low 32 bits of each slot's address's hash (``slotHash(_:)``), when the slot holds one.
    var hashes = [UInt32](repeating: 0, count: 16)
    private(set) var count = 0
    /// The chunks' bytes, dead records included.
    private(set) var arenaBytes = 0
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

    /// - Parameter chunkBytes: A power of two: 1 MiB copies in about 0.1 ms when a snapshot
    ///   shares it.
    init(chunkBytes: Int = 1 << 20) {
        precondition(chunkBytes >= 64 && chunkBytes.nonzeroBitCount == 1, "a chunk is a power of two of at least 64 bytes")
        self.chunkBytes = chunkBytes
    }

    /// Makes room in the table for `records` more, so that a restore of a million does not
    /// rebuild it each time it doubles.
    func reserve(records: Int) {
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
        let hash = Self.hash(address)
        let replaced = take(address, hash: hash)
        if (count + 1) * 2 > slots.count { rebuildSlots(capacity: slots.count * 2) }
        var owners = ByteWriter(capacity: 0)
        ownership.encode(into: &owners)
        var address = address
        let place = address.withUTF8 { addressBytes in
            precondition((1...256).contains(addressBytes.count), "an address is 1 to 256 bytes")
            let length = Self.header + addressBytes.count + state.count + owners.bytes.count
            let place = room(for: (length + 7) & ~7)
            let chunk = place / chunkBytes
            chunks[chunk].append(term == nil ? 0 : Self.hashed | Self.handedOut)
            chunks[chunk].append(UInt8(addressBytes.count - 1))
            append(UInt32(state.count), to: chunk)
            append(UInt32(owners.bytes.count), to: chunk)
            append(lastSeq, to: chunk)
            append(term?.high ?? 0, to: chunk)
            append(term?.low ?? 0, to: chunk)
            chunks[chunk].append(contentsOf: addressBytes)
            chunks[chunk].append(contentsOf: state)
            chunks[chunk].append(contentsOf: owners.bytes)
            chunks[chunk].append(contentsOf: repeatElement(0, count: (8 - chunks[chunk].count % 8) % 8))
            arenaBytes += chunks[chunk].count - place % chunkBytes
            return place
        }
        fill(place: place, hash: hash)
        count += 1
        if term == nil {
            unhashed += 1
            hashCursor = min(hashCursor, place)
        }
        return replaced
    }

    /// Where a record of `bytes` goes: the end of the chunk being filled, or of a new one (an
    /// emptied one first); a chunk of its own when it is larger than a chunk.
    private func room(for bytes: Int) -> Int {
        if let filling {
            if chunks[filling].count + bytes <= chunkBytes { return filling * chunkBytes + chunks[filling].count }
            self.filling = nil
            noteIfMostlyDead(filling)
        }
        let chunk: Int
        if let reused = emptied.popLast() {
            chunk = reused
        } else {
            chunk = chunks.count
            precondition((chunk + 1) * (chunkBytes / 8) < Int(UInt32.max), "more instances at rest than 32 GiB of chunks hold")
            chunks.append([])
            deadBytes.append(0)
        }
        // Once records fill a chunk, each new one takes its whole size at once, not doubling from 4 KiB.
        chunks[chunk].reserveCapacity(bytes > chunkBytes ? bytes : min(chunkBytes, max(bytes, 4_096, arenaBytes)))
        filling = bytes > chunkBytes ? nil : chunk
        return chunk * chunkBytes
    }

    /// Wakes an instance: its record, which leaves the table; nil when none rests at `address`.
    /// - Parameter hash: The address's ``hash(_:)``, if known.
    func take(_ address: String, hash: Int? = nil) -> Record? {
        guard count > 0 else { return nil }
        var address = address
        guard let slot = address.withUTF8({ find(UnsafeRawBufferPointer($0), hash: hash) }) else { return nil }
        let place = Int(slots[slot] - 1) * 8
        let (chunk, offset) = (place / chunkBytes, place % chunkBytes)
        let record = read(at: place)
        let flags = chunks[chunk][offset]
        chunks[chunk][offset] = flags | Self.woken
        if flags & Self.handedOut == 0 { unhashed -= 1 }
        let size = Self.size(in: chunks[chunk], at: offset)
        deadBytes[chunk] += size
        count -= 1
        removeSlot(slot)
        noteIfMostlyDead(chunk)
        return record
    }

    /// Notes a chunk to empty once more than half its bytes are dead records, unless records are
    /// being appended to it.
    private func noteIfMostlyDead(_ chunk: Int) {
        if chunk != filling, deadBytes[chunk] * 2 > chunks[chunk].count { mostlyDead.insert(chunk) }
    }

    /// Every record at rest, chunk by chunk.
    func forEach(_ body: (Record) -> Void) {
        frozen.forEach(body)
    }

    /// The records at rest now, to read on another thread: the chunks themselves, each shared until
    /// this set next changes it (then that one is copied, as an array is), not a value per record.
    var frozen: Frozen { Frozen(chunks: chunks, count: count) }

    /// Forgets every record.
    func removeAll() {
        chunks = []
        arenaBytes = 0
        deadBytes = []
        filling = nil
        emptied = []
        mostlyDead = []
        slots = [UInt32](repeating: 0, count: 16)
        hashes = [UInt32](repeating: 0, count: 16)
        count = 0
        unhashed = 0
        hashCursor = 0
    }

    // MARK: Hashing a restore

    /// Hands out up to `limit` records not hashed yet, in order; give each one's term back
    /// with ``setTerm(_:at:lastSeq:)`` (one that does not hash stays without a term).
    func takeUnhashed(limit: Int) -> [Unhashed] {
        var taken: [Unhashed] = []
        var (chunk, offset) = (hashCursor / chunkBytes, hashCursor % chunkBytes)
        while taken.count < limit, unhashed > 0, chunk < chunks.count {
            guard offset < chunks[chunk].count else {
                (chunk, offset) = (chunk + 1, 0)
                continue
            }
            let place = chunk * chunkBytes + offset
            offset += Self.size(in: chunks[chunk], at: offset)
            guard chunks[chunk][place % chunkBytes] & (Self.woken | Self.handedOut) == 0 else { continue }
            chunks[chunk][place % chunkBytes] |= Self.handedOut
            unhashed -= 1
            let record = read(at: place)
            taken.append(Unhashed(place: place, address: record.address, lastSeq: record.lastSeq, state: record.state))
        }
        // Past a chunk's end, the next chunk: a place past a record larger than a chunk is not one.
        if chunk >= chunks.count {
            hashCursor = chunks.count * chunkBytes
        } else {
            hashCursor = offset < chunks[chunk].count ? chunk * chunkBytes + offset : (chunk + 1) * chunkBytes
        }
        return taken
    }

    /// Sets the term of a record handed out for hashing; false when it was woken meanwhile (or the
    /// records were replaced: `lastSeq` no longer matches).
    func setTerm(_ term: DigestAccumulator.Term, at place: Int, lastSeq: UInt64) -> Bool {
        let (chunk, offset) = (place / chunkBytes, place % chunkBytes)
        guard chunk < chunks.count, offset + Self.header <= chunks[chunk].count,
            chunks[chunk][offset] & (Self.woken | Self.hashed) == 0, chunks[chunk][offset] & Self.handedOut != 0,
            Self.load(UInt64.self, in: chunks[chunk], at: offset + Self.lastSeqAt) == lastSeq
        else { return false }
        chunks[chunk][offset] |= Self.hashed
        store(term.high, at: offset + Self.termAt, in: chunk)
        store(term.low, at: offset + Self.termAt + 8, in: chunk)
        return true
    }

    /// Empties one chunk whose records are mostly dead, moving its live ones to the chunk being
    /// filled, unless records are out for hashing (their places stay valid until their terms are
    /// back). One chunk a call: at most a chunk's bytes copied on the owner's thread at a time.
    func compactIfWorthIt(hashingOut: Bool) {
        guard !hashingOut, unhashed == 0 else { return }
        while let chunk = mostlyDead.popFirst() {
            // Noted once, when it became mostly dead; it may have been emptied since.
            guard chunk != filling, !chunks[chunk].isEmpty, deadBytes[chunk] * 2 > chunks[chunk].count else { continue }
            let old = chunks[chunk]
            var live: [Range<Int>] = []
            var offset = 0
            while offset < old.count {
                let size = Self.size(in: old, at: offset)
                if old[offset] & Self.woken == 0 { live.append(offset..<(offset + size)) }
                offset += size
            }
            if losesARecordWhenEmptying, let last = live.popLast() {  // The bug: its last record is forgotten.
                removeSlot(slot(of: old[last], at: chunk * chunkBytes + last.lowerBound))
                count -= 1
            }
            for record in live { move(old[record], from: chunk * chunkBytes + record.lowerBound) }
            chunks[chunk] = []
            arenaBytes -= old.count
            deadBytes[chunk] = 0
            emptied.append(chunk)
            // None waits to be hashed; the next record that does sets it back (``insert``), to
            // where a record begins: the chunks changed under the old place.
            hashCursor = .max
            return
        }
    }

    /// Appends a live record's bytes where records are filled and points its slot there.
    private func move(_ record: ArraySlice<UInt8>, from place: Int) {
        let slot = slot(of: record, at: place)
        let newPlace = room(for: record.count)
        chunks[newPlace / chunkBytes].append(contentsOf: record)
        arenaBytes += record.count
        slots[slot] = UInt32(newPlace / 8 + 1)
    }

    // MARK: The chunks

    private func store<T: FixedWidthInteger>(_ value: T, at offset: Int, in chunk: Int) {
        chunks[chunk].withUnsafeMutableBytes { $0.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self) }
    }

    private func append<T: FixedWidthInteger>(_ value: T, to chunk: Int) {
        withUnsafeBytes(of: value.littleEndian) { chunks[chunk].append(contentsOf: $0) }
    }
}
