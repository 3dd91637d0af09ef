/// Follows the coordinator's ordered log for a replica: which entries to apply, which ranges to
/// fetch, and when to join through a snapshot.
///
/// A pure state machine in the manner of NIO's: the owner (a node, a monitor replaying state) feeds
/// it what arrives from the publish and sync sockets and carries out the ``Action``s it returns. It
/// never skips a gap: entries wait behind one until a range repair fills it, and a range that was
/// compacted away turns into a snapshot join.
struct LogFollower {
    enum Action: Equatable {
        /// Apply these entries, in this order.
        case apply([Entry])
        /// Send this request on the sync socket.
        case requestRange(RangeRequest)
        case requestSnapshot(SnapshotRequest)
        /// Replace every instance with the snapshot's, at `seq`, then apply `then`.
        case restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance], then: [Entry])
    }

    private(set) var stream: OrderedStream
    private var repair: (request: UInt64, sentAt: UInt64)?
    private var snapshot: (request: UInt64, sentAt: UInt64, instances: [SnapshotChunkMessage.Instance])?
    private var heldDuringSnapshot: [Entry] = []
    private var nextRequest: UInt64 = 1
    /// Microseconds before an unanswered request is sent again.
    let retryAfter: UInt64
    /// The most entries one range request asks for.
    let rangeSize: UInt32

    init(applied: UInt64 = 0, retryAfter: UInt64 = 1_000_000, rangeSize: UInt32 = 10_000, maxEarly: Int = 100_000) {
        stream = OrderedStream(applied: applied, maxEarly: maxEarly)
        self.retryAfter = retryAfter
        self.rangeSize = rangeSize
    }

    var applied: UInt64 { stream.applied }
    var knownHead: UInt64 { stream.knownHead }
    var isJoining: Bool { snapshot != nil }
    var waitingCount: Int { stream.waitingCount + heldDuringSnapshot.count }

    /// Entries from the publish socket.
    mutating func receive(_ entries: [Entry], now: UInt64) -> [Action] {
        if snapshot != nil {
            heldDuringSnapshot.append(contentsOf: entries)
            return []
        }
        let ready = stream.receive(entries)
        // The next range is asked for before these are applied: the coordinator reads and sends it
        // while this replica applies, so a long replay keeps both sides busy.
        return repairIfNeeded(now: now) + release(ready)
    }

    /// A heartbeat or an ack revealed the coordinator's head.
    mutating func noteHead(_ head: UInt64, now: UInt64) -> [Action] {
        stream.noteHead(head)
        return snapshot == nil ? repairIfNeeded(now: now) : []
    }

    mutating func receive(_ range: RangeMessage, now: UInt64) -> [Action] {
        if range.request == repair?.request { repair = nil }
        stream.noteHead(range.head)
        return receive(range.entries, now: now)
    }

    mutating func receive(_ chunk: SnapshotChunkMessage, now: UInt64) -> [Action] {
        guard var pending = snapshot, pending.request == chunk.request else { return [] }
        pending.instances.append(contentsOf: chunk.instances)
        guard chunk.isLast else {
            snapshot = pending
            return []
        }
        snapshot = nil
        let held = heldDuringSnapshot
        heldDuringSnapshot = []
        var ready = stream.reset(to: chunk.seq)
        ready.append(contentsOf: stream.receive(held))
        return [.restore(seq: chunk.seq, instances: pending.instances, then: ready)] + repairIfNeeded(now: now)
    }

    /// An ERROR on the sync socket: a compacted range turns into a snapshot join.
    mutating func receive(_ error: ErrorReply, now: UInt64) -> [Action] {
        if error.request == repair?.request { repair = nil }
        if error.error.code == .notFound, snapshot == nil { return startSnapshot(now: now) }
        return []
    }

    /// Asks for every instance's state; entries arriving meanwhile are held.
    mutating func startSnapshot(now: UInt64) -> [Action] {
        let request = takeRequestID()
        snapshot = (request, now, [])
        repair = nil
        return [.requestSnapshot(SnapshotRequest(request: request))]
    }

    /// Resends what went unanswered.
    mutating func tick(now: UInt64) -> [Action] {
        if let pending = snapshot {
            guard now - pending.sentAt > retryAfter * 10 else { return [] }
            return startSnapshot(now: now)
        }
        return repairIfNeeded(now: now)
    }

    private func release(_ entries: [Entry]) -> [Action] {
        entries.isEmpty ? [] : [.apply(entries)]
    }

    private mutating func repairIfNeeded(now: UInt64) -> [Action] {
        guard let missing = stream.missing else { return [] }
        if let repair, now - repair.sentAt < retryAfter { return [] }
        let request = takeRequestID()
        repair = (request, now)
        let count = min(UInt64(rangeSize), missing.upperBound - missing.lowerBound + 1)
        return [.requestRange(RangeRequest(request: request, from: missing.lowerBound, to: missing.upperBound, maxCount: UInt32(count)))]
    }

    private mutating func takeRequestID() -> UInt64 {
        defer { nextRequest += 1 }
        return nextRequest
    }
}
