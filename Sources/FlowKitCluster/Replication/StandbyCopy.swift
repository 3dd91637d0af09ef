/// A standby coordinator's copy of the leader's log, as a state machine without I/O.
///
/// It fetches from the leader what follows its durable end, makes each answer durable, then
/// fetches again: the next FETCH is also how the leader learns the copy is durable. An answer
/// that says the two logs disagree (the standby holds entries a deposed leader wrote and never
/// committed) has the copy cut back to where they agree, then fetched again from there. Entries
/// up to the leader's commit point, and no further, are handed on to be applied and served.
///
/// Inputs: the leader to follow, the leader's answers, the local log's completions, time
/// (microseconds). Outputs: ``Action``s.
struct StandbyCopy {
    enum Action: Equatable {
        /// Send these frames (a FETCH) to the leader's sync socket.
        case fetch([[UInt8]])
        /// Append these entry records and make them durable, then report ``appended(through:lastEpoch:now:)``.
        case append([[UInt8]], through: UInt64, lastEpoch: UInt32)
        /// Drop every entry after `keep`, durably, then report ``truncated(durable:lastEpoch:now:)``
        /// with the epoch of the entry at `keep`.
        case truncate(keep: UInt64)
        /// The leader committed up to here, and the copy holds it: apply and serve it.
        case commit(through: UInt64)
    }

    let id: String
    /// The most record bytes asked for in one FETCH.
    let maxBytes: UInt32
    /// A FETCH unanswered for this long is sent again (the leader holds one for less).
    let retryAfter: UInt64
    /// A refused FETCH is sent again after this long.
    let retryAfterRefusal: UInt64 = 100_000
    private(set) var leader: LeaderRecord?
    /// The last seq the copy holds durably, and the epoch that ordered it.
    private(set) var durable: UInt64
    private(set) var lastEpoch: UInt32
    /// How far the copy is committed: the leader's commit point, no further than ``durable``.
    private(set) var committed: UInt64
    private var outstanding: (request: UInt64, retryAt: UInt64)?
    /// An append or truncation is being carried out.
    private var isWriting = false
    private var nextRequest: UInt64 = 1

    init(id: String, durable: UInt64, lastEpoch: UInt32, committed: UInt64, maxBytes: UInt32 = 4 << 20, retryAfter: UInt64 = 1_000_000) {
        self.id = id
        self.durable = durable
        self.lastEpoch = lastEpoch
        self.committed = min(committed, durable)
        self.maxBytes = maxBytes
        self.retryAfter = retryAfter
    }

    /// This coordinator led, and wrote its own log meanwhile: the copy continues from what the log
    /// holds now (the next leader cuts whatever of it was never committed).
    mutating func resume(durable: UInt64, lastEpoch: UInt32, committed: UInt64) {
        self.durable = durable
        self.lastEpoch = lastEpoch
        self.committed = min(max(self.committed, committed), durable)
        outstanding = nil
        isWriting = false
    }

    /// Follow `leader` (nil: none known; stop fetching).
    mutating func follow(_ leader: LeaderRecord?, now: UInt64) -> [Action] {
        guard leader != self.leader else { return [] }
        self.leader = leader
        outstanding = nil
        return fetchIfIdle(now: now)
    }

    /// The leader's answer to a FETCH.
    mutating func received(_ answer: FetchedMessage, now: UInt64) throws -> [Action] {
        guard let leader, let outstanding, answer.request == outstanding.request else { return [] }  // stale or duplicate
        guard answer.epoch == leader.epoch else {
            self.outstanding = nil
            throw ProtocolError(.malformed, "FETCHED of epoch \(answer.epoch) from the leader of epoch \(leader.epoch)")
        }
        self.outstanding = nil
        leaderCommitted = max(leaderCommitted, answer.committed)
        if answer.keep != FetchedMessage.keepAll {
            guard answer.keep < durable else {
                throw ProtocolError(.malformed, "FETCHED asks to keep up to \(answer.keep), but the copy ends at \(durable)")
            }
            // Committed entries are never cut: a leader holds them all.
            guard answer.keep >= committed else {
                throw ProtocolError(.internalError, "the leader asks to cut committed entries (keep \(answer.keep), committed \(committed))")
            }
            isWriting = true
            return [.truncate(keep: answer.keep)]
        }
        // The leader agrees with the copy up to its durable end: what it committed of that is
        // committed here too (not before: the copy may end with entries the leader never had).
        // The commit is applied after the append and the next FETCH: applying is off the path
        // by which the leader learns what this copy holds.
        let commit = noteCommitted()
        guard let last = answer.records.last else { return fetchIfIdle(now: now) + commit }
        var expected = durable + 1
        for record in answer.records {
            guard let seq = Entry.peekSeq(record), seq == expected else {
                throw ProtocolError(.malformed, "FETCHED records must continue the copy at \(expected)")
            }
            expected += 1
        }
        guard let epoch = Entry.peekEpoch(last) else { throw ProtocolError(.truncated, "an entry record without its epoch") }
        isWriting = true
        return [.append(answer.records, through: expected - 1, lastEpoch: epoch)] + commit
    }

    /// The leader refused the FETCH (it does not lead yet, or leads another term): ask again after
    /// a short pause rather than the full retry interval.
    mutating func refused(now: UInt64) {
        guard let outstanding else { return }
        self.outstanding = (outstanding.request, now + retryAfterRefusal)
    }

    /// The copy holds everything through `seq` durably.
    mutating func appended(through seq: UInt64, lastEpoch: UInt32, now: UInt64) -> [Action] {
        isWriting = false
        durable = seq
        self.lastEpoch = lastEpoch
        return fetchIfIdle(now: now) + noteCommitted()
    }

    /// The copy was cut back to `durable`, whose entry `lastEpoch` ordered (0 for an empty copy).
    mutating func truncated(durable: UInt64, lastEpoch: UInt32, now: UInt64) -> [Action] {
        isWriting = false
        self.durable = durable
        self.lastEpoch = lastEpoch
        return fetchIfIdle(now: now)
    }

    /// Time passed: fetch again if the last FETCH went unanswered.
    mutating func tick(now: UInt64) -> [Action] {
        if let outstanding, now >= outstanding.retryAt { self.outstanding = nil }
        return fetchIfIdle(now: now)
    }

    /// The leader's commit point as last heard.
    private var leaderCommitted: UInt64 = 0

    /// After the leader confirmed the copy up to ``durable``: the commit point moves to the
    /// leader's, as far as the copy goes.
    private mutating func noteCommitted() -> [Action] {
        let next = min(leaderCommitted, durable)
        guard next > committed else { return [] }
        committed = next
        return [.commit(through: next)]
    }

    private mutating func fetchIfIdle(now: UInt64) -> [Action] {
        guard let leader, outstanding == nil, !isWriting else { return [] }
        let request = nextRequest
        nextRequest += 1
        outstanding = (request, now + retryAfter)
        let fetch = FetchRequest(request: request, epoch: leader.epoch, durable: durable, lastEpoch: lastEpoch, maxBytes: maxBytes, id: id)
        return [.fetch(fetch.frames)]
    }
}

/// The leader's answer to one FETCH, decided from its log's epochs.
enum FetchAnswer: Equatable {
    /// Entries from this seq on.
    case entries(from: UInt64)
    /// Nothing new yet: hold the FETCH until something is written (or a while passes).
    case wait
    /// The standby's log disagrees after `keep`: it cuts back to there and fetches again.
    case truncate(keep: UInt64)
    /// The standby is behind the leader's oldest retained entry: it needs a snapshot.
    case behindRetention(firstSeq: UInt64)

    /// - Parameters:
    ///   - written: The leader's durable log end.
    ///   - firstSeq: The oldest seq its log still holds.
    ///   - epochs: The epochs of its log.
    init(_ fetch: FetchRequest, written: UInt64, firstSeq: UInt64, epochs: EpochHistory) {
        // Below the retained log the epochs are gone, so agreement cannot be checked there.
        if fetch.durable < firstSeq, fetch.durable > 0 || firstSeq > 1 {
            self = .behindRetention(firstSeq: firstSeq)
            return
        }
        if fetch.durable > 0 {
            let mine = fetch.durable <= written ? epochs.epoch(of: fetch.durable) : nil
            if mine != fetch.lastEpoch {
                // Where the two logs still agree: the end of the standby's last epoch in this log
                // (or of the latest earlier one), and before the entry that disagrees.
                let agreed = epochs.end(ofEpochAtMost: fetch.lastEpoch, logEnd: written)
                self = .truncate(keep: min(agreed, fetch.durable - 1))
                return
            }
        }
        self = fetch.durable >= written ? .wait : .entries(from: fetch.durable + 1)
    }
}
