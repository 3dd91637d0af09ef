/// The leader's account of its standbys' copies of the log: how far each has made the log
/// durable, which coordinators are in sync (eligible to lead), and so what is committed.
///
/// Kafka's in-sync replicas, with the set kept in the election service: an entry is committed, and
/// may be acknowledged and published, once every in-sync coordinator holds it durably, the leader
/// included. Only an in-sync coordinator may become leader, so whoever leads next holds every
/// committed entry. A standby that has not caught up with the leader's log for ``lagTimeout`` is
/// proposed out of the set (commits then go on without it); one that holds everything committed
/// is proposed back in. While a change is being written to the election service, both the old and
/// the new set must hold an entry for it to commit: whichever set the service holds at any moment,
/// each of its members holds everything committed.
///
/// Times are microseconds; no I/O: the coordinator writes the proposed sets to etcd and reports
/// back with ``eligibleWritten(_:)`` or ``eligibleWriteFailed()``.
struct ReplicationProgress {
    struct Standby: Equatable {
        /// The last seq it holds durably, in a log that agrees with the leader's.
        var durable: UInt64 = 0
        /// The leader's log end when it last fetched: reaching it counts as caught up.
        var writtenAtLastFetch: UInt64 = 0
        /// When it last caught up with the leader's log; `nil`: not in this term (the deposed
        /// leader), so it lags from the start.
        var caughtUpAt: UInt64?
        /// When it last fetched; `nil`: not in this term yet.
        var lastFetchAt: UInt64?

        /// Whether it has been behind the leader's log for longer than `lagTimeout`.
        func lags(written: UInt64, now: UInt64, lagTimeout: UInt64) -> Bool {
            durable < written && caughtUpAt.map { now > $0 + lagTimeout } ?? true
        }
    }

    let leader: String
    /// The set the election service holds.
    private(set) var eligible: Set<String>
    /// A set being written to the election service, if any.
    private(set) var proposed: Set<String>?
    private(set) var standbys: [String: Standby] = [:]
    /// The leader's own durable log end.
    private(set) var written: UInt64
    /// Every entry up to here is held by every in-sync coordinator.
    private(set) var committed: UInt64
    /// The fewest in-sync coordinators, the leader included, for anything to commit.
    let minInSync: Int
    let lagTimeout: UInt64

    /// - Parameters:
    ///   - eligible: The set the election service holds (`nil`: none written yet, so every
    ///     coordinator in `members` counts).
    ///   - deposed: The leader this one follows: dead, paused or cut off, it holds nothing of the
    ///     new term and counts as lagging from the start, so commits need not wait ``lagTimeout``
    ///     for it (it is proposed back in once it has caught up).
    ///   - committed: What is known to be committed (at least what this coordinator saw committed
    ///     as a standby).
    init(
        leader: String, members: [String], eligible: [String]?, deposed: String? = nil, written: UInt64, committed: UInt64,
        minInSync: Int, lagTimeout: UInt64, now: UInt64
    ) {
        self.leader = leader
        let initial = Set(eligible ?? members).union([leader])
        self.eligible = initial
        self.written = written
        self.committed = min(committed, written)
        self.minInSync = minInSync
        self.lagTimeout = lagTimeout
        for member in members where member != leader {
            standbys[member] = Standby(caughtUpAt: member == deposed ? nil : now)
        }
        // No set yet (the cluster's first leader): it is written at the first tick.
        mustWrite = eligible.map { Set($0) != initial } ?? true
    }

    /// Whether the election service's set must be written even if it does not change.
    private var mustWrite: Bool

    enum Action: Equatable {
        /// Write this set to the election service, guarded by the leader's record.
        case proposeEligible(Set<String>)
    }

    /// Who must hold an entry for it to commit.
    var required: Set<String> { eligible.union(proposed ?? []) }

    /// Whether too few coordinators are in sync for anything to commit.
    var isBelowMinimum: Bool { eligible.count < minInSync }

    // MARK: Inputs

    /// The leader's log is durable up to `seq`.
    mutating func wrote(upTo seq: UInt64) -> Bool {
        written = max(written, seq)
        return advance()
    }

    /// `id` fetched, holding `durable` entries durably in a log that agrees with the leader's.
    /// It may be ahead of ``written``: the leader sends a group while it syncs it; the commit
    /// point waits for both.
    ///
    /// - Returns: Whether the commit point moved.
    mutating func fetched(by id: String, durable: UInt64, now: UInt64) -> Bool {
        guard var standby = standbys[id] else { return false }
        standby.durable = durable
        if durable >= standby.writtenAtLastFetch { standby.caughtUpAt = now }
        standby.writtenAtLastFetch = written
        standby.lastFetchAt = now
        standbys[id] = standby
        return advance()
    }

    /// Time passed: propose the set's next change, if one is due and none is being written.
    ///
    /// The set never shrinks below ``minInSync``: below it nothing commits anyway, so every
    /// coordinator in the set still holds everything committed, and a smaller set would only
    /// leave fewer coordinators that may lead. The laggards longest without a FETCH go first.
    mutating func tick(now: UInt64) -> [Action] {
        guard proposed == nil else { return [] }
        var next = eligible
        let laggards = standbys.filter { id, standby in
            eligible.contains(id) && standby.lags(written: written, now: now, lagTimeout: lagTimeout)
        }
        .sorted { ($0.value.lastFetchAt ?? 0, $0.key) < ($1.value.lastFetchAt ?? 0, $1.key) }
        for (id, _) in laggards where next.count > minInSync {
            next.remove(id)
        }
        for (id, standby) in standbys where !eligible.contains(id) && standby.durable >= committed && !standby.lags(written: written, now: now, lagTimeout: lagTimeout) {
            next.insert(id)
        }
        guard next != eligible || mustWrite else { return [] }
        mustWrite = false
        proposed = next
        return [.proposeEligible(next)]
    }

    /// The election service holds `set` now.
    mutating func eligibleWritten(_ set: Set<String>) -> Bool {
        eligible = set
        proposed = nil
        return advance()
    }

    /// The write failed (etcd unreachable, or this coordinator no longer leads): the old set stands.
    mutating func eligibleWriteFailed() {
        if proposed == eligible { mustWrite = true }
        proposed = nil
    }

    /// In-sync standbys that have lagged past ``lagTimeout`` but cannot be left out, the set being
    /// at its minimum: every commit waits for them.
    func blocking(now: UInt64) -> [String] {
        standbys.filter { id, standby in
            eligible.contains(id) && eligible.count <= minInSync && standby.lags(written: written, now: now, lagTimeout: lagTimeout)
        }
        .keys.sorted()
    }

    /// The account published in the cluster status.
    func status(leaderSince: UInt64, now: UInt64) -> ReplicationStatus {
        var coordinators = [
            ReplicationStatus.Coordinator(id: leader, role: "leader", inSync: true, durable: written, lag: 0, lastFetchMillis: nil)
        ]
        for (id, standby) in standbys.sorted(by: { $0.key < $1.key }) {
            coordinators.append(
                ReplicationStatus.Coordinator(
                    id: id, role: "standby", inSync: eligible.contains(id), durable: standby.durable,
                    lag: written - min(written, standby.durable),
                    lastFetchMillis: standby.lastFetchAt.map { (now - min(now, $0)) / 1_000 }
                )
            )
        }
        return ReplicationStatus(leader: leader, leaderSince: leaderSince / 1_000, written: written, minInSync: minInSync, coordinators: coordinators)
    }

    // MARK: The commit point

    /// Moves ``committed`` to the lowest durable seq among the required, if enough are in sync.
    private mutating func advance() -> Bool {
        guard !isBelowMinimum else { return false }
        var point = written
        for id in required where id != leader {
            point = min(point, standbys[id]?.durable ?? 0)
        }
        guard point > committed else { return false }
        committed = point
        return true
    }
}
