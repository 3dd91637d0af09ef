/// The clients a node owes an answer once it has applied far enough: emits that wait until
/// applied, queries that ask for a minimum applied seq, and progress watchers.
///
/// A state machine without I/O, in the manner of ``LogFollower``: the node tells it what it applied
/// and what time it is, and sends the replies it returns.
struct ClientWaiters {
    /// What the node must do for a waiting client.
    enum Action: Equatable {
        /// Send `reply` to `peer`.
        case reply(ClientReply, to: RouterEnvelope)
        /// Answer the query `request` for `address` with the instance's state now.
        case answerQuery(request: UInt64, address: String, to: RouterEnvelope)
    }

    private struct AppliedWaiter {
        var seq: UInt64
        var peer: RouterEnvelope
        var request: UInt64
        var epoch: UInt32
    }

    private struct QueryWaiter {
        var min: UInt64
        var peer: RouterEnvelope
        var request: UInt64
        var address: String
        var deadline: UInt64
    }

    private struct Watcher {
        var peer: RouterEnvelope
        var request: UInt64
        var until: UInt64
    }

    /// How long a query may wait for its minimum applied seq; quoted in its timeout error.
    let queryTimeout: Duration
    /// At most this many watchers; the oldest goes first.
    static let maxWatchers = 64
    /// A watch lasts at most this long.
    static let maxWatchSeconds: UInt32 = 3_600

    private var appliedWaiters: [AppliedWaiter] = []
    private var queryWaiters: [QueryWaiter] = []
    private var watchers: [Watcher] = []
    /// When the last applied batch was done (µs since the epoch), for PROGRESS; 0 before one.
    private var appliedAt: UInt64 = 0

    init(queryTimeout: Duration) {
        self.queryTimeout = queryTimeout
    }

    var isEmpty: Bool { appliedWaiters.isEmpty && queryWaiters.isEmpty && watchers.isEmpty }
    var hasWatchers: Bool { !watchers.isEmpty }

    // MARK: Inputs

    /// A client's emit or cancel was ordered at `seq` (0 when it was a duplicate the coordinator
    /// no longer places): answered now, unless the client waits until applied and this node has
    /// not applied it yet.
    mutating func ordered(seq: UInt64, epoch: UInt32, wait: WaitMode, peer: RouterEnvelope, request: UInt64, applied: UInt64) -> [Action] {
        let isApplied = seq != 0 && seq <= applied
        guard wait == .applied, seq != 0, !isApplied else {
            return [.reply(.emitted(request: request, seq: seq, epoch: epoch, applied: isApplied), to: peer)]
        }
        waitUntilApplied(seq: seq, epoch: epoch, peer: peer, request: request)
        return []
    }

    /// An emit ordered at `seq` whose client waits until this node has applied it.
    mutating func waitUntilApplied(seq: UInt64, epoch: UInt32, peer: RouterEnvelope, request: UInt64) {
        appliedWaiters.append(AppliedWaiter(seq: seq, peer: peer, request: request, epoch: epoch))
    }

    /// A query that waits until this node has applied `min`, for at most ``queryTimeout``.
    mutating func waitForQuery(min: UInt64, address: String, peer: RouterEnvelope, request: UInt64, now: UInt64) {
        queryWaiters.append(
            QueryWaiter(min: min, peer: peer, request: request, address: address, deadline: now + UInt64(queryTimeout.microseconds))
        )
    }

    /// A client that wants a PROGRESS after every applied batch for `seconds` (at most an hour);
    /// a second WATCH with the same request replaces the first. It hears where the node is at once.
    mutating func watch(peer: RouterEnvelope, request: UInt64, seconds: UInt32, applied: UInt64, now: UInt64) -> [Action] {
        let until = now + UInt64(min(seconds, Self.maxWatchSeconds)) * 1_000_000
        watchers.removeAll { $0.peer.identity == peer.identity && $0.request == request }
        watchers.append(Watcher(peer: peer, request: request, until: until))
        if watchers.count > Self.maxWatchers { watchers.removeFirst(watchers.count - Self.maxWatchers) }
        return progress(applied: applied, now: now)
    }

    /// The node applied a batch: answer the waiters it satisfies and tell every watcher.
    mutating func applied(_ applied: UInt64, now: UInt64) -> [Action] {
        appliedAt = now
        return released(applied: applied) + progress(applied: applied, now: now)
    }

    /// The applied seq moved without a batch (a snapshot restored): answer the waiters it satisfies.
    mutating func released(applied: UInt64) -> [Action] {
        var actions: [Action] = []
        appliedWaiters.removeAll { waiter in
            guard waiter.seq <= applied else { return false }
            actions.append(.reply(.emitted(request: waiter.request, seq: waiter.seq, epoch: waiter.epoch, applied: true), to: waiter.peer))
            return true
        }
        queryWaiters.removeAll { query in
            guard query.min <= applied else { return false }
            actions.append(.answerQuery(request: query.request, address: query.address, to: query.peer))
            return true
        }
        return actions
    }

    /// Every tick: PROGRESS again (a report the ROUTER dropped, a watcher's queue full, is made good
    /// by the next one, even when nothing more is applied), and queries past their deadline fail.
    mutating func tick(applied: UInt64, now: UInt64) -> [Action] {
        var actions = progress(applied: applied, now: now)
        queryWaiters.removeAll { query in
            guard query.deadline <= now else { return false }
            let message = "this node has applied \(applied), not yet \(query.min), after \(queryTimeout)"
            actions.append(.reply(.error(request: query.request, ProtocolError(.coordinatorUnavailable, message)), to: query.peer))
            return true
        }
        return actions
    }

    /// A PROGRESS to every watcher whose watch has not ended; ended watches go.
    private mutating func progress(applied: UInt64, now: UInt64) -> [Action] {
        watchers.removeAll { $0.until < now }
        let time = appliedAt == 0 ? now : appliedAt
        return watchers.map { .reply(.progress(request: $0.request, applied: applied, time: time), to: $0.peer) }
    }
}
