/// The instances that may go to rest (``RestingInstances``): each noted when its digest was taken
/// at its last seq. One still at that seq ``after`` µs later is due: its state is encoded off the
/// owner's thread with its digest checked again (``DigestBook/nextDigestSlice(now:held:)``), and
/// the set puts it to rest. An instance used all the time is noted at each digest and stays an
/// object. That work has a budget of its own (``HashingBudget/resting()``): a wave of instances
/// due at once (a population's, a minute later) goes at a tenth of a thread.
struct RestCandidates {
    /// How long an instance stays unchanged before it rests (µs); nil: never.
    var after: UInt64?
    private var queue = ShrinkingQueue<(replica: any FlowReplica, seq: UInt64, at: UInt64)>()
    private var budget = HashingBudget.resting()
    /// While the budget is spent and instances are due, when it will have room again.
    private(set) var resumesAt: UInt64?

    init(after: UInt64?) {
        self.after = after
    }

    /// The candidates its storage has room for (``ShrinkingQueue/room``).
    var room: Int { queue.room }

    mutating func note(_ replica: any FlowReplica, seq: UInt64, at time: UInt64) {
        guard after != nil else { return }
        queue.append((replica, seq, time))
    }

    /// Up to `limit` candidates noted at least ``after`` before `now` and unchanged since; none
    /// while the budget is spent (then ``resumesAt`` says when to ask again).
    mutating func takeDue(now: UInt64, limit: Int) -> [any FlowReplica] {
        guard let after else { return [] }
        budget.refill(now: now)
        resumesAt = nil
        guard budget.hasRoom else {
            if hasDue(now: now) { resumesAt = budget.roomAt(now: now) }
            return []
        }
        var due: [any FlowReplica] = []
        while due.count < limit, let first = queue.first, first.at.addingReportingOverflow(after).partialValue <= now {
            _ = queue.popFirst()
            if Self.isUnchanged(first.replica, since: first.seq) { due.append(first.replica) }
        }
        return due
    }

    /// Charges the budget for the microseconds of CPU a slice of them took (hashed and encoded).
    mutating func charge(_ micros: UInt64) { budget.charge(micros) }

    /// Whether one was noted at least ``after`` before `now` (it may have changed since).
    func hasDue(now: UInt64) -> Bool {
        guard let after, let first = queue.first else { return false }
        return first.at.addingReportingOverflow(after).partialValue <= now
    }

    /// Whether the instance is still at `seq`, digested there.
    static func isUnchanged(_ replica: any FlowReplica, since seq: UInt64) -> Bool {
        replica.lastSeq == seq && replica.digested?.seq == seq && !replica.isUndigested
    }

    mutating func removeAll() { queue.removeAll() }
}
