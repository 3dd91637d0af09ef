/// A standby coordinator's copy of the leader's log, as a state machine without I/O.
///
/// A pipeline, as a Raft follower's: it asks for what follows its log's ``end`` (received,
/// durable or syncing) again as soon as an answer arrives; what arrives while one append syncs is
/// the next append's group; each append's durable end is reported in a FETCH at once. Past
/// ``maxBytes`` waiting to be written it asks for nothing until an append finishes. An answer that
/// says the logs disagree (a deposed leader's uncommitted tail) has the copy cut back after the
/// append in flight; answers to FETCHes sent before the cut are ignored. Entries up to the
/// leader's commit point, no further than the copy is durable, are applied and served. A copy
/// behind the leader's retained log installs the leader's snapshot (``SnapshotInstall``) and its
/// log starts again after it.
///
/// Inputs: the leader to follow, the leader's answers, the local log's completions, time
/// (microseconds). Outputs: ``Action``s.
struct StandbyCopy {
    let id: String
    /// The most record bytes asked for in one FETCH, and the most waiting to be written before
    /// the copy stops asking.
    let maxBytes: UInt32
    /// A FETCH unanswered for this long is sent again (the leader holds one for less).
    let retryAfter: UInt64
    /// A refused FETCH is sent again after this long.
    let retryAfterRefusal: UInt64 = 100_000
    private(set) var leader: LeaderRecord?
    /// The last seq the copy holds durably, and the epoch that ordered it.
    private(set) var durable: UInt64
    private(set) var lastEpoch: UInt32
    /// The last seq the copy received (durable, syncing, or waiting to be written), and its epoch.
    private(set) var end: UInt64
    private(set) var endEpoch: UInt32
    /// How far the copy is committed: the leader's commit point, no further than ``durable``.
    private(set) var committed: UInt64
    /// Received while an append was in flight: the next append's group.
    private var waiting: [[UInt8]] = []
    private var waitingBytes = 0
    private enum Write { case none, append, truncate, install }
    private var writing = Write.none
    /// A cut the leader asked for while an append was in flight: carried out after it.
    private var cutAfterWrite: UInt64?
    /// The latest FETCH sent, and when to send it again if unanswered.
    private var outstanding: (request: UInt64, retryAt: UInt64)?
    /// Answers to FETCHes before this one are ignored (sent before a cut, or to another leader).
    private var firstValidRequest: UInt64 = 1
    private var nextRequest: UInt64 = 1
    /// The leader's commit point as last heard.
    private var leaderCommitted: UInt64 = 0

    /// A snapshot being fetched.
    private var install: SnapshotInstall?
    /// The seq an empty log starts after (a snapshot installed, then a restart): a snapshot older
    /// than it cannot be installed, the log never going back.
    var floor: UInt64 = 0
    /// The epoch of the entry at ``floor`` if this run installed the snapshot there (0: unknown).
    private var floorEpoch: UInt32 = 0
    /// Whether a snapshot is being fetched or installed.
    var isInstalling: Bool { install != nil }
    /// The id of the last request sent.
    var lastRequest: UInt64 { nextRequest - 1 }

    init(id: String, durable: UInt64, lastEpoch: UInt32, committed: UInt64, maxBytes: UInt32 = 4 << 20, retryAfter: UInt64 = 1_000_000) {
        self.id = id
        self.durable = durable
        self.lastEpoch = lastEpoch
        self.end = durable
        self.endEpoch = lastEpoch
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
        restart(at: durable, epoch: lastEpoch)
        writing = .none
        install = nil
    }

    /// Follow `leader` (nil: none known; stop fetching).
    mutating func follow(_ leader: LeaderRecord?, now: UInt64) -> [Action] {
        guard leader != self.leader else { return [] }
        self.leader = leader
        outstanding = nil
        firstValidRequest = nextRequest
        // A snapshot half fetched from the last leader is dropped (one being installed lands).
        if writing != .install { install = nil }
        return fetchIfIdle(now: now)
    }

    /// The leader's answer to a FETCH.
    mutating func received(_ answer: FetchedMessage, now: UInt64) throws -> [Action] {
        // Stale: sent before a cut or to another leader, or never sent.
        guard let leader, answer.request >= firstValidRequest, answer.request < nextRequest else { return [] }
        if answer.request == outstanding?.request { outstanding = nil }
        guard answer.epoch == leader.epoch else {
            throw ProtocolError(.malformed, "FETCHED of epoch \(answer.epoch) from the leader of epoch \(leader.epoch)")
        }
        leaderCommitted = max(leaderCommitted, answer.committed)
        if answer.keep != FetchedMessage.keepAll {
            guard answer.keep < end else {
                throw ProtocolError(.malformed, "FETCHED asks to keep up to \(answer.keep), but the copy ends at \(end)")
            }
            // Committed entries are never cut: a leader holds them all.
            guard answer.keep >= committed else {
                throw ProtocolError(.internalError, "the leader asks to cut committed entries (keep \(answer.keep), committed \(committed))")
            }
            return cut(keep: answer.keep)
        }
        // The leader agrees with the copy up to the FETCH's end, so up to ``durable``: what it
        // committed of that is committed here too (not further: the copy may end with entries the
        // leader never had). Applying is off the path by which the leader learns what this copy
        // holds, so the FETCH goes first.
        let fresh = answer.records.drop { (Entry.peekSeq($0) ?? 0) <= end }
        guard let last = fresh.last else { return fetchIfIdle(now: now) + noteCommitted() }
        var expected = end + 1
        for record in fresh {
            guard let seq = Entry.peekSeq(record), seq == expected else {
                throw ProtocolError(.malformed, "FETCHED records must continue the copy at \(expected)")
            }
            expected += 1
        }
        guard let epoch = Entry.peekEpoch(last) else { throw ProtocolError(.truncated, "an entry record without its epoch") }
        end = expected - 1
        endEpoch = epoch
        waiting += fresh
        waitingBytes += fresh.reduce(0) { $0 + $1.count }
        // Ask for what follows at once (unless the window is full), then write.
        let append = startAppend()
        return fetch(now: now) + append + noteCommitted()
    }

    /// The leader refused a request: a FETCH behind its retained log starts a snapshot install;
    /// any other refusal is asked again after a short pause rather than the full retry interval.
    mutating func refused(_ error: ErrorReply, now: UInt64) -> [Action] {
        if install?.request == error.request {
            // Asked again from the start on the next tick after the pause.
            install!.refused(now: now, pause: retryAfterRefusal, retryAfter: installRetryAfter)
            return []
        }
        guard leader != nil, error.request >= firstValidRequest, error.request < nextRequest else { return [] }
        if error.error.code == .notFound, writing == .none, install == nil {
            return startInstall(now: now)
        }
        if let outstanding { self.outstanding = (outstanding.request, now + retryAfterRefusal) }
        return []
    }

    /// How long a snapshot install may go unanswered before it is asked for again.
    var installRetryAfter: UInt64 { retryAfter * 5 }

    /// A chunk of the snapshot being installed.
    mutating func received(_ chunk: SnapshotChunkMessage, now: UInt64) -> [Action] {
        guard install != nil else { return [] }
        return take(install!.received(chunk, nextRequest: nextRequest, now: now), now: now)
    }

    /// The snapshot's seq's entry, for its epoch: the snapshot is ready to install.
    mutating func received(_ range: RangeMessage, now: UInt64) -> [Action] {
        guard let install, writing == .none else { return [] }
        return take(install.received(range), now: now)
    }

    private mutating func take(_ step: SnapshotInstall.Step, now: UInt64) -> [Action] {
        switch step {
        case .waiting: return []
        case .restart: return startInstall(now: now)
        case .ask(let range):
            nextRequest = max(nextRequest, range.request + 1)
            return [.send(range.frames)]
        case .ready(let seq, _, _, _) where seq <= durable || seq < floor:
            // Older than this copy (the leader's replica is behind its commit point, just after it
            // started from its own snapshot): the log never goes back; ask again a while later.
            install!.refused(now: now, pause: retryAfter, retryAfter: installRetryAfter)
            return []
        case .ready(let seq, let epoch, let instances, let sessions):
            writing = .install
            return [.install(seq: seq, epoch: epoch, instances: instances, sessions: sessions)]
        }
    }

    /// The log and the replica hold the snapshot at `seq`, whose entry `epoch` ordered: the copy
    /// goes on from there.
    mutating func installed(seq: UInt64, epoch: UInt32, now: UInt64) -> [Action] {
        install = nil
        writing = .none
        if seq >= floor { floorEpoch = epoch }
        floor = max(floor, seq)
        durable = seq
        lastEpoch = epoch
        committed = max(committed, seq)
        leaderCommitted = max(leaderCommitted, seq)
        restart(at: seq, epoch: epoch)
        return fetchIfIdle(now: now)
    }

    /// Installing the snapshot failed: it is fetched again.
    mutating func installFailed(now: UInt64) -> [Action] {
        writing = .none
        return startInstall(now: now)
    }

    private mutating func startInstall(now: UInt64) -> [Action] {
        guard leader != nil else { return [] }
        restart(at: end, epoch: endEpoch)
        let request = nextRequest
        nextRequest += 1
        install = SnapshotInstall(request: request, now: now)
        return [.send(install!.snapshotRequest.frames)]
    }

    /// The copy holds everything through `seq` durably.
    mutating func appended(through seq: UInt64, lastEpoch: UInt32, now: UInt64) -> [Action] {
        writing = .none
        durable = seq
        self.lastEpoch = lastEpoch
        if let keep = cutAfterWrite {
            cutAfterWrite = nil
            writing = .truncate
            return [.truncate(keep: keep)]
        }
        // Tell the leader at once: its commit waits for this.
        let append = startAppend()
        return fetch(now: now) + append + noteCommitted()
    }

    /// The copy was cut back to `durable`, whose entry `lastEpoch` ordered (0 for an empty copy);
    /// or an append failed and the copy goes on from what the log holds.
    mutating func truncated(durable: UInt64, lastEpoch: UInt32, now: UInt64) -> [Action] {
        // Cut back to an installed snapshot, the empty log has no record there: epoch 0 disagreed
        // with every leader, which asked for a cut below the floor, for good (simulation seed 399).
        let lastEpoch = durable > 0 && durable == floor && lastEpoch == 0 ? floorEpoch : lastEpoch
        writing = .none
        cutAfterWrite = nil
        self.durable = durable
        self.lastEpoch = lastEpoch
        restart(at: durable, epoch: lastEpoch)
        return fetchIfIdle(now: now)
    }

    /// Time passed: fetch again if the last FETCH went unanswered, or the snapshot being fetched.
    mutating func tick(now: UInt64) -> [Action] {
        if let install, writing != .install {
            return now >= install.heardAt + installRetryAfter ? startInstall(now: now) : []
        }
        if let outstanding, now >= outstanding.retryAt { self.outstanding = nil }
        return fetchIfIdle(now: now)
    }

    /// The commit point moves to the leader's, as far as the copy is durable.
    private mutating func noteCommitted() -> [Action] {
        let next = min(leaderCommitted, durable)
        guard next > committed else { return [] }
        committed = next
        return [.commit(through: next)]
    }

    /// The copy goes on from `seq`: nothing waits, and answers to earlier FETCHes are ignored.
    private mutating func restart(at seq: UInt64, epoch: UInt32) {
        end = seq
        endEpoch = epoch
        waiting = []
        waitingBytes = 0
        outstanding = nil
        firstValidRequest = nextRequest
    }

    private mutating func cut(keep: UInt64) -> [Action] {
        restart(at: keep, epoch: 0)
        if writing == .append {
            cutAfterWrite = keep
            return []
        }
        writing = .truncate
        return [.truncate(keep: keep)]
    }

    private mutating func startAppend() -> [Action] {
        guard writing == .none, !waiting.isEmpty else { return [] }
        writing = .append
        defer { (waiting, waitingBytes) = ([], 0) }
        return [.append(waiting, through: end, lastEpoch: endEpoch)]
    }

    private mutating func fetchIfIdle(now: UInt64) -> [Action] { outstanding == nil ? fetch(now: now) : [] }

    /// A FETCH from ``end``, reporting ``durable``; the leader holds the latest of each standby.
    private mutating func fetch(now: UInt64) -> [Action] {
        guard let leader, writing != .truncate, install == nil, cutAfterWrite == nil, waitingBytes <= Int(maxBytes) else { return [] }
        let request = nextRequest
        nextRequest += 1
        outstanding = (request, now + retryAfter)
        let fetch = FetchRequest(
            request: request, epoch: leader.epoch, durable: durable, end: end, endEpoch: endEpoch, maxBytes: maxBytes, id: id
        )
        return [.send(fetch.frames)]
    }
}
