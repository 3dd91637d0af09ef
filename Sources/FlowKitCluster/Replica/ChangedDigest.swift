import FlowKitCore

/// An instance's last digest as the combined digest holds it: the seq of the state it describes,
/// and its term in the combined digest (replacing it XORs the old term out without hashing again).
/// Kept on the instance: a table of them cost a million instances ~120 bytes each.
struct DigestedState {
    let seq: UInt64
    let term: DigestAccumulator.Term
}

/// A digest computed for an instance: the seq of the state it describes, and the digest.
struct ChangedDigest: Sendable, Equatable {
    let seq: UInt64
    let digest: StateDigest
}

/// Digests not reported yet, oldest first. A queue: a table by address took a node that restored
/// a million 12 s of its loop. An instance recorded again is queued again; the entry its newer
/// digest supersedes is skipped when taken (a record's has none).
///
/// A report takes the newest first (a quarter of what it carries), then the oldest: behind a
/// backlog (a million populated or restored instances go out over some thirty reports) an
/// instance that changes now is still compared within a report or two, so the divergence alarm
/// keeps its pace. Oldest-first alone found one divergent instance behind a million 11.5 s after
/// its first entry.
struct FreshDigests {
    private var queue = ShrinkingQueue<(replica: (any FlowReplica)?, address: Address, changed: ChangedDigest)>()

    /// The digests its storage has room for (``ShrinkingQueue/room``).
    var room: Int { queue.room }

    mutating func append(_ replica: (any FlowReplica)?, _ address: Address, _ changed: ChangedDigest) {
        queue.append((replica, address, changed))
    }

    /// At most `limit` digests still current, taken out of the queue: up to a quarter of them the
    /// newest, the rest the oldest.
    mutating func take(atMost limit: Int) -> [Address: ChangedDigest] {
        var taken: [Address: ChangedDigest] = [:]
        taken.reserveCapacity(min(queue.count, limit))
        while taken.count < limit / 4, let next = queue.popLast() { keep(next, in: &taken) }
        while taken.count < limit, let next = queue.popFirst() { keep(next, in: &taken) }
        return taken
    }

    private func keep(_ next: (replica: (any FlowReplica)?, address: Address, changed: ChangedDigest), in taken: inout [Address: ChangedDigest]) {
        // A newer digest of the instance is queued after this one (and, taken from the back, was
        // taken already).
        if let replica = next.replica, replica.digested?.seq != next.changed.seq { return }
        if taken[next.address] == nil { taken[next.address] = next.changed }
    }
}

extension ReportedDigest {
    /// Changed instances' digests as a report carries them, each of its flow's version in
    /// `versions` (``FlowRegistry/versionsAboveOne``).
    static func list(_ changed: [Address: ChangedDigest], versions: [String: UInt16]?) -> [ReportedDigest] {
        changed.map { address, changed in
            ReportedDigest(address: address.description, seq: changed.seq, digest: changed.digest, version: versions?[address.flow] ?? 1)
        }
    }
}
