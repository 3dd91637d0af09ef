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

    /// A snapshot being received: the requests of this join, the one whose chunks are followed,
    /// and the chunks so far, in order.
    ///
    /// Until a first chunk comes, the snapshot is asked for again every two ``retryAfter``s (the
    /// request or its answer was lost, or the coordinator refused it), and the first chunk of any
    /// of those requests is followed: a coordinator still encoding a million instances answers
    /// each request from the one encoding, and the first answer to come is taken, not dropped
    /// for a newer request. Once chunks come, it is asked for again after ten ``retryAfter``s
    /// without another (a slow loop between two chunks of a large snapshot is not a loss), or at
    /// once when a chunk is missing from the order.
    private struct PendingSnapshot {
        /// The requests of this join, oldest first (the last ``maxAsked``).
        var asked: [UInt64]
        /// The request whose chunks are followed: the first to send its chunk 0.
        var following: UInt64?
        /// When the last request was sent or the last chunk came.
        var progressAt: UInt64
        var instances: [SnapshotChunkMessage.Instance] = []
        var nextChunk: UInt32 = 0

        static let maxAsked = 4

        /// Whether a reply to `request` concerns this join: the request followed, or before one
        /// is, any of them.
        func answers(_ request: UInt64) -> Bool {
            following.map { $0 == request } ?? asked.contains(request)
        }
    }

    /// A range request that has not been answered.
    private struct Repair {
        var request: UInt64
        var sentAt: UInt64
        var range: ClosedRange<UInt64>
    }

    private(set) var stream: OrderedStream
    /// Range requests in flight, in the order they were sent (and of their ranges).
    private var repairs: [Repair] = []
    private var snapshot: PendingSnapshot?
    private var heldDuringSnapshot: [Entry] = []
    private var nextRequest: UInt64 = 1
    /// Heads that only an acknowledgement announced, with when, in increasing order: their entries
    /// are published at the moment they are acknowledged, on another connection, and usually arrive
    /// an instant later. They are repaired only once ``publicationGrace`` has passed.
    private var announced: [(head: UInt64, at: UInt64)] = []
    /// The highest seq known to exist from the publish socket's own order (entries, heartbeats),
    /// a welcome or a range reply: a gap below it is a loss, repaired at once.
    private var confirmedHead: UInt64
    /// Microseconds before an unanswered request is sent again.
    let retryAfter: UInt64
    /// Microseconds an entry announced by an acknowledgement is given to arrive on the publish
    /// socket before it is fetched from the sync socket.
    let publicationGrace: UInt64
    /// The most entries one range request asks for.
    let rangeSize: UInt32
    /// The wire protocol the coordinator's sync socket speaks: this process's newest until a
    /// request is refused in an older one (``ErrorReply/olderProtocol(than:)``). Followers outside
    /// a node say their requests in it (``LogFollowing``); a node keeps its own per coordinator.
    private(set) var protocolVersion = WireHeader.spoken.upperBound
    /// The most range requests in flight at once. With two, the coordinator reads and sends the
    /// next range while this replica decodes one and applies another, so a long replay keeps the
    /// coordinator's reads, the decoding and the applying all busy.
    let maxRequestsInFlight: Int

    init(
        applied: UInt64 = 0,
        retryAfter: UInt64 = 1_000_000,
        publicationGrace: UInt64 = 100_000,
        rangeSize: UInt32 = 10_000,
        maxRequestsInFlight: Int = 2,
        maxEarly: Int = 100_000,
        versions: ReadableVersions = .all
    ) {
        precondition(maxRequestsInFlight >= 1, "a follower needs at least one range request in flight")
        stream = OrderedStream(applied: applied, maxEarly: maxEarly, versions: versions)
        confirmedHead = applied
        self.retryAfter = retryAfter
        self.publicationGrace = publicationGrace
        self.rangeSize = rangeSize
        self.maxRequestsInFlight = maxRequestsInFlight
    }

    var applied: UInt64 { stream.applied }
    var knownHead: UInt64 { stream.knownHead }
    /// The entry after ``applied`` when this process's build cannot read it (``OrderedStream/unreadable``).
    var unreadable: UnreadableEntry? { stream.unreadable }
    var isJoining: Bool { snapshot != nil }
    var waitingCount: Int { stream.waitingCount + heldDuringSnapshot.count }

    /// Entries from the publish socket.
    mutating func receive(_ entries: [Entry], now: UInt64) -> [Action] {
        if snapshot != nil {
            heldDuringSnapshot.append(contentsOf: entries)
            return []
        }
        let ready = stream.receive(entries)
        confirmedHead = max(confirmedHead, stream.knownHead)
        // The next ranges are asked for before these are applied: the coordinator reads and sends
        // them while this replica applies.
        return repairIfNeeded(now: now) + release(ready)
    }

    /// A heartbeat or a welcome revealed the coordinator's head: what is missing below it is
    /// fetched now.
    mutating func noteHead(_ head: UInt64, now: UInt64) -> [Action] {
        stream.noteHead(head)
        confirmedHead = max(confirmedHead, head)
        return snapshot == nil ? repairIfNeeded(now: now) : []
    }

    /// An acknowledgement named the coordinator's head. The entries up to it were published as
    /// they were acknowledged and are probably on their way: what is still missing after
    /// ``publicationGrace`` is fetched (at a later arrival or tick), not at once. Fetching at once
    /// cost a range request for nearly every commit under load, for entries that arrived anyway.
    mutating func noteAnnouncedHead(_ head: UInt64, now: UInt64) -> [Action] {
        guard head > max(stream.knownHead, confirmedHead) else { return [] }
        stream.noteHead(head)
        if announced.count == Self.maxAnnounced { announced.removeLast() }
        announced.append((head, now))
        return []
    }

    /// The most announced heads remembered; past it the newest is replaced, which keeps the
    /// earlier time and so fetches no later than it would have.
    private static let maxAnnounced = 64

    mutating func receive(_ range: RangeMessage, now: UInt64) -> [Action] {
        repairs.removeAll { $0.request == range.request }
        stream.noteHead(range.head)
        confirmedHead = max(confirmedHead, range.head)
        return receive(range.entries, now: now)
    }

    mutating func receive(_ chunk: SnapshotChunkMessage, now: UInt64) -> [Action] {
        // Taken out, so the instances gathered so far have one owner: appending to a copy
        // still held here copied every instance gathered so far at each chunk (2 s of a joining
        // node's loop with a million).
        // A chunk of a request not followed, or before one is, a chunk other than the first.
        guard snapshot?.answers(chunk.request) == true, snapshot?.following != nil || chunk.chunk == 0, var pending = snapshot.take() else {
            return []
        }
        pending.following = chunk.request
        // A chunk dropped on the way (the coordinator's ROUTER drops what a full queue cannot
        // take) would leave instances out, or a split state short: ask for the snapshot again.
        guard chunk.chunk == pending.nextChunk, (try? SnapshotChunking.append(chunk.instances, to: &pending.instances)) != nil else {
            return startSnapshot(now: now)
        }
        pending.nextChunk += 1
        pending.progressAt = now
        guard chunk.isLast else {
            snapshot = pending
            return []
        }
        let held = heldDuringSnapshot
        heldDuringSnapshot = []
        // Older than what this node applied (a coordinator that restarted serves its replica,
        // which has not caught up yet): restoring it would take the node back, to apply its own
        // entries, and run their effects, again. The held entries go on, and the repair is asked
        // for again.
        if chunk.seq < stream.applied {
            let ready = stream.receive(held)
            return (ready.isEmpty ? [] : [.apply(ready)]) + repairIfNeeded(now: now)
        }
        // A state written by a newer version of its flow than this build reads: the snapshot is
        // not restored, and the follower stops where it is, as before an entry it cannot read.
        if let unreadable = pending.instances.lazy.compactMap({ [stream] in stream.versions.unreadable($0) }).first {
            stream.stop(at: unreadable)
            return []
        }
        var ready = stream.reset(to: chunk.seq)
        confirmedHead = max(confirmedHead, chunk.seq)
        ready.append(contentsOf: stream.receive(held))
        return [.restore(seq: chunk.seq, instances: pending.instances, then: ready)] + repairIfNeeded(now: now)
    }

    /// An ERROR on the sync socket: a compacted range the node still needs turns into a snapshot
    /// join. An answer to a repair no longer out (its entries came another way, or it was given up
    /// and asked again) says nothing of what the node needs now: a node that had caught up when
    /// such a late refusal came joined through a snapshot older than what it had applied, went
    /// back and applied its own entries, and ran their effects, a second time.
    mutating func receive(_ error: ErrorReply, now: UInt64) -> [Action] {
        if let older = error.olderProtocol(than: protocolVersion) {
            // The coordinator speaks an older protocol, which its refusal came in: ask again in it.
            protocolVersion = older
            if snapshot?.answers(error.request) == true { return startSnapshot(now: now) }
            repairs.removeAll { $0.request == error.request }
            return repairIfNeeded(now: now)
        }
        guard let index = repairs.firstIndex(where: { $0.request == error.request }) else { return [] }
        let repair = repairs.remove(at: index)
        if error.error.code == .notFound, snapshot == nil, repair.range.upperBound > stream.applied { return startSnapshot(now: now) }
        return []
    }

    /// Asks for every instance's state, from the first chunk on; entries arriving meanwhile are
    /// held.
    mutating func startSnapshot(now: UInt64) -> [Action] {
        snapshot = nil
        repairs = []
        return askForSnapshot(now: now)
    }

    /// Asks for the snapshot under a new request, keeping the earlier ones of this join that no
    /// chunk came for (``PendingSnapshot``).
    private mutating func askForSnapshot(now: UInt64) -> [Action] {
        let request = takeRequestID()
        let asked = snapshot.map { $0.following == nil ? $0.asked.suffix(PendingSnapshot.maxAsked - 1) : [] } ?? []
        snapshot = PendingSnapshot(asked: asked + [request], progressAt: now)
        return [.requestSnapshot(SnapshotRequest(request: request))]
    }

    /// Resends what went unanswered.
    mutating func tick(now: UInt64) -> [Action] {
        if let pending = snapshot {
            guard now - pending.progressAt > retryAfter * (pending.following == nil ? 2 : 10) else { return [] }
            return pending.following == nil ? askForSnapshot(now: now) : startSnapshot(now: now)
        }
        return repairIfNeeded(now: now)
    }

    private func release(_ entries: [Entry]) -> [Action] {
        entries.isEmpty ? [] : [.apply(entries)]
    }

    /// Asks for what is missing and not already asked for, up to ``maxRequestsInFlight`` requests.
    ///
    /// A request that went unanswered for ``retryAfter`` is given up, with every later one: their
    /// replies may still come, and are harmless (what they carry is applied once, in order).
    private mutating func repairIfNeeded(now: UInt64) -> [Action] {
        // Requests whose whole range has been applied meanwhile (from the publish socket) are done.
        let applied = stream.applied
        repairs.removeAll { $0.range.upperBound <= applied }
        if let oldest = repairs.first, now - oldest.sentAt >= retryAfter { repairs = [] }
        guard var missing = stream.missing else {
            announced.removeAll()
            return []
        }
        // Announced heads whose entries arrived are done; the rest wait out their grace.
        announced.removeAll { $0.head <= applied }
        if let oldest = announced.first, now - min(now, oldest.at) >= publicationGrace {
            announced.removeAll()
            confirmedHead = max(confirmedHead, stream.knownHead)
        }
        guard missing.lowerBound <= confirmedHead else { return [] }
        missing = missing.lowerBound...min(missing.upperBound, confirmedHead)
        var actions: [Action] = []
        // The first missing seq not covered by a request in flight. A reply can hold fewer entries
        // than asked (the coordinator caps a range by bytes), which leaves a hole before the next
        // request's range: that hole is asked for first.
        var next = missing.lowerBound
        var index = 0
        while repairs.count < maxRequestsInFlight, next <= missing.upperBound {
            if index < repairs.count, repairs[index].range.lowerBound <= next {
                next = max(next, repairs[index].range.upperBound + 1)
                index += 1
                continue
            }
            let limit = index < repairs.count ? repairs[index].range.lowerBound - 1 : missing.upperBound
            let last = min(limit, next + UInt64(rangeSize) - 1)
            let request = takeRequestID()
            repairs.insert(Repair(request: request, sentAt: now, range: next...last), at: index)
            index += 1
            actions.append(
                .requestRange(RangeRequest(request: request, from: next, to: last, maxCount: UInt32(last - next + 1)))
            )
            next = last + 1
        }
        return actions
    }

    private mutating func takeRequestID() -> UInt64 {
        defer { nextRequest += 1 }
        return nextRequest
    }
}
