import DequeModule

/// A node's submissions that the coordinator has not acknowledged yet, in submission order.
///
/// A submission stays until an ACK says it was ordered (or was a duplicate of one that was), and
/// is sent again when unacknowledged for too long or when the coordinator restarts: retries are
/// safe because the coordinator drops duplicates by `(origin, session, submission)`. The queue is
/// bounded; ``isFull`` tells the node to refuse new emits as overloaded.
struct SubmissionQueue {
    /// Who waits for a submission's outcome.
    enum Waiter: Sendable {
        /// A client's emit or cancel, answered when ordered or applied.
        case client(peer: RouterEnvelope, request: UInt64, wait: WaitMode, deadline: UInt64)
        /// An effect's event: nobody to answer.
        case effect
    }

    struct Pending {
        var submission: Submission
        var waiter: Waiter
        /// When it was last sent; 0 = never.
        var lastSent: UInt64 = 0
        /// When it was first sent; 0 = never.
        var firstSent: UInt64 = 0
        var attempts = 0
        /// Why the coordinator last refused it, when the refusal is one the node retries
        /// (overloaded, its log unavailable); the client's error names it if the wait runs out.
        var lastRefusal: ProtocolError.Code?
    }

    private(set) var pending: [UInt64: Pending] = [:]
    /// Ids to send at once, in id order: new submissions, and all of them after ``resendAll()``.
    private var unsent: Deque<UInt64> = []
    /// Sends awaiting an ACK, oldest first, so the retries due are always at the front. An entry
    /// whose submission was acknowledged or sent again since is stale and skipped when reached.
    private var sent: Deque<(id: UInt64, at: UInt64)> = []
    /// Submissions a client waits for, in the order their deadlines fall (every client gets the
    /// same timeout), so a tick looks at the expired ones only, not at every submission held. An
    /// entry whose submission was acknowledged since is stale and skipped when reached.
    private var deadlines: Deque<(id: UInt64, deadline: UInt64)> = []
    private var nextSubmission: UInt64 = 1
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { pending.count }
    var isFull: Bool { pending.count >= capacity }

    /// Adds a submission, giving it the next id.
    mutating func add(
        kind: EntryKind,
        codec: PayloadCodec,
        version: UInt16,
        term: UInt64 = 0,
        address: String,
        payload: [UInt8],
        waiter: Waiter,
        now: UInt64
    ) -> Submission {
        let submission = Submission(
            submission: nextSubmission,
            kind: kind,
            codec: codec,
            version: version,
            submittedAt: now,
            term: term,
            address: address,
            payload: payload
        )
        nextSubmission += 1
        pending[submission.submission] = Pending(submission: submission, waiter: waiter)
        unsent.append(submission.submission)
        if case .client(_, _, _, let deadline) = waiter {
            // In deadline order even if a caller's deadlines were not: inserted from the back.
            var index = deadlines.endIndex
            while index > deadlines.startIndex, deadlines[index - 1].deadline > deadline { index -= 1 }
            deadlines.insert((submission.submission, deadline), at: index)
        }
        return submission
    }

    /// Removes an acknowledged submission.
    ///
    /// - Returns: Its waiter, or `nil` if it was already acknowledged.
    mutating func acknowledge(_ submission: UInt64) -> Pending? {
        pending.removeValue(forKey: submission)
    }

    /// What an acknowledgement settled for a submission that was still queued.
    enum Outcome {
        /// Ordered at `seq` (or a duplicate of the entry at `seq`; 0 when the coordinator no
        /// longer remembers it).
        case ordered(Pending, seq: UInt64)
        /// Refused for good: the node and the coordinator disagree about the flows.
        case refused(Pending, ProtocolError)
    }

    /// Takes in an ACK from the coordinator.
    ///
    /// Ordered and duplicate submissions leave the queue; so do refused ones, unless the refusal is
    /// one to retry (the coordinator overloaded, its log unavailable, it asks for a HELLO first, or
    /// it runs an older build of the flow than this node's): those stay and go again,
    /// their reason noted for the client's error should its wait run out.
    ///
    /// - Returns: The outcome of each submission the ACK settled, in its order; submissions
    ///   already settled (by their entry, or an earlier ACK) are left out.
    mutating func receive(_ ack: AckMessage) -> [Outcome] {
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(ack.acks.count)
        for item in ack.acks {
            switch item.status {
            case .ordered, .duplicate:
                guard let settled = acknowledge(item.submission) else { continue }
                outcomes.append(.ordered(settled, seq: item.seq))
            case .refused:
                let reason = item.reason ?? .internalError
                // `helloFirst`: the coordinator does not know this connection yet; the node says
                // HELLO and sends them again.
                // `versionUnreadable`: the coordinator is not upgraded yet; `versionNotAgreed`:
                // another node of the flow is not.
                if [.overloaded, .internalError, .helloFirst, .versionUnreadable, .versionNotAgreed].contains(reason) {
                    pending[item.submission]?.lastRefusal = reason
                    continue
                }
                guard let settled = acknowledge(item.submission) else { continue }
                outcomes.append(.refused(settled, ProtocolError(reason, "the coordinator refused the entry: \(reason)")))
            }
        }
        return outcomes
    }

    /// The submissions to send now (unacknowledged for `retryAfter` microseconds, then never
    /// sent), at most `limit` of them and about `maxBytes` of payload: one SUBMIT message stays far
    /// below the transport's message size limit. It costs what it returns, not what is in flight.
    mutating func due(now: UInt64, retryAfter: UInt64, limit: Int = 4_096, maxBytes: Int = 4 << 20) -> [Submission] {
        var result: [Submission] = []
        var bytes = 0
        /// Marks the submission at `index` of `pending` sent now and adds it to `result`, unless
        /// the message is full. In place: copying the entry out and back would hash twice and
        /// retain everything it holds.
        func take(_ index: Dictionary<UInt64, Pending>.Index) -> Bool {
            let size = pending.values[index].submission.payload.count
            guard result.isEmpty || bytes + size <= maxBytes else { return false }
            bytes += size
            pending.values[index].lastSent = now
            if pending.values[index].firstSent == 0 { pending.values[index].firstSent = now }
            pending.values[index].attempts += 1
            sent.append((pending.keys[index], now))
            result.append(pending.values[index].submission)
            return true
        }
        while result.count < limit, let (id, at) = sent.first {
            guard let index = pending.index(forKey: id), pending.values[index].lastSent == at else {
                sent.removeFirst()  // acknowledged, or sent again since
                continue
            }
            guard now >= at + retryAfter else { break }
            sent.removeFirst()
            guard take(index) else {
                sent.prepend((id, at))
                return result
            }
        }
        while result.count < limit, let id = unsent.first {
            guard let index = pending.index(forKey: id), pending.values[index].lastSent == 0 else {
                unsent.removeFirst()  // acknowledged or expired before it was sent
                continue
            }
            guard take(index) else { break }
            unsent.removeFirst()
        }
        return result
    }

    /// Marks everything as never sent, so the next ``due(now:retryAfter:limit:maxBytes:)`` sends it
    /// all: the coordinator restarted or the node reconnected.
    mutating func resendAll() {
        for id in pending.keys { pending[id]!.lastSent = 0 }
        unsent = Deque(pending.keys.sorted())
        sent.removeAll()
    }

    /// Client waiters whose deadline passed, with the error each is told, removed from their submissions (which stay queued:
    /// an entry already sent may still be ordered, and a later retry must find it a duplicate).
    ///
    /// - Parameter timeout: How long a client waits for its acknowledgement, for the error.
    mutating func expireWaiters(now: UInt64, timeout: Duration) -> [(peer: RouterEnvelope, request: UInt64, error: ProtocolError)] {
        var expired: [(peer: RouterEnvelope, request: UInt64, error: ProtocolError)] = []
        while let (id, deadline) = deadlines.first, now >= deadline {
            deadlines.removeFirst()
            guard let entry = pending[id], case .client(let peer, let request, _, _) = entry.waiter else { continue }
            expired.append((peer, request, Self.expiryError(entry, wasSent: entry.lastSent != 0, timeout: timeout)))
            if entry.lastSent == 0 {
                // Never sent: it can never be ordered, so it goes.
                pending[id] = nil
            } else {
                pending[id]!.waiter = .effect
            }
        }
        return expired
    }

    /// What a client whose emit was not acknowledged within `timeout` is told.
    static func expiryError(_ pending: Pending, wasSent: Bool, timeout: Duration) -> ProtocolError {
        let retrying = "the node keeps retrying, so it may still be ordered (the coordinator drops duplicates)"
        switch pending.lastRefusal {
        case .internalError?:
            return ProtocolError(.internalError, "the coordinator's log refused the write for \(timeout) (is its disk full?); \(retrying)")
        case .overloaded?:
            return ProtocolError(.overloaded, "the coordinator was overloaded for \(timeout); \(retrying)")
        case .versionUnreadable?:
            return ProtocolError(
                .versionUnreadable, "the coordinator's build does not read this node's version of the flow (upgrade the coordinators first); \(retrying)"
            )
        case .versionNotAgreed?:
            return ProtocolError(
                .versionNotAgreed,
                "a live node of the flow runs an older version than this node's, so the cluster has not agreed on it (see flowkit status); \(retrying)"
            )
        default:
            guard wasSent else { return ProtocolError(.coordinatorUnavailable, "the coordinator is unreachable; the entry was not submitted") }
            return ProtocolError(.coordinatorUnavailable, "the coordinator did not acknowledge the entry within \(timeout); \(retrying)")
        }
    }
}
