/// The election service in a simulation: what etcd holds for the coordinators' election (the
/// keys of ``EtcdElection``: `leader` on its lease, `epoch`, `eligible`), and the same
/// transactions, decided at the moment a request reaches it. Leases run out on the simulated
/// clock; etcd itself is never the fault here (its links are cut instead).
final class SimulatedEtcd {
    enum Request {
        case election(ElectionMachine.Request)
        /// ``EtcdElection/setEligible(_:leader:)``: written only while `leader` is the record held.
        case setEligible(Set<String>, leader: LeaderRecord)
    }

    enum Answer {
        case granted(lease: Int64, seconds: Int64)
        case renewed(seconds: Int64)
        case leaseNotFound
        case campaigned(ElectionMachine.CampaignOutcome)
        case eligibleWritten(Bool)
        case revoked
    }

    /// Each lease and when it runs out.
    private(set) var leases: [Int64: UInt64] = [:]
    private var nextLease: Int64 = 1
    /// The leader key and the lease it is attached to.
    private(set) var leader: (record: LeaderRecord, lease: Int64)?
    private(set) var epoch: UInt32 = 0
    private(set) var eligible: [String]?
    /// Grows with every change, as etcd's revision does: a watcher ignores anything older than
    /// what it has seen.
    private(set) var revision: Int64 = 1

    var view: ElectionView { ElectionView(leader: leader?.record, eligible: eligible, epoch: epoch) }

    /// Leases whose time is up are gone, and the leader key with its lease. Returns whether the
    /// keys changed.
    func expire(now: UInt64) -> Bool {
        let expired = leases.filter { $0.value <= now }.map(\.key)
        guard !expired.isEmpty else { return false }
        for lease in expired { leases[lease] = nil }
        return dropLeaderIfItsLeaseIsGone()
    }

    /// Carries out a request at `now`: the answer, whether the keys changed, and a lease deadline
    /// to wake up for.
    func handle(_ request: Request, now: UInt64) -> (answer: Answer, changed: Bool, deadline: UInt64?) {
        switch request {
        case .election(.grantLease):
            // The machine asks for its settings' lease; every coordinator here asks for the same.
            let id = nextLease
            nextLease += 1
            leases[id] = now + Self.leaseSeconds * 1_000_000
            return (.granted(lease: id, seconds: Int64(Self.leaseSeconds)), false, leases[id])
        case .election(.renewLease(let id)):
            guard leases[id] != nil else { return (.leaseNotFound, false, nil) }
            leases[id] = now + Self.leaseSeconds * 1_000_000
            return (.renewed(seconds: Int64(Self.leaseSeconds)), false, leases[id])
        case .election(.revokeLease(let id)):
            leases[id] = nil
            return (.revoked, dropLeaderIfItsLeaseIsGone(), nil)
        case .election(.campaign(let lease, let candidate)):
            if let leader { return (.campaigned(.lost(leader: leader.record)), false, nil) }
            if let eligible, !eligible.contains(candidate.id) { return (.campaigned(.lost(leader: nil)), false, nil) }
            guard leases[lease] != nil else { return (.leaseNotFound, false, nil) }
            var record = candidate
            record.epoch = max(epoch &+ 1, candidate.epoch, 1)
            epoch = record.epoch
            leader = (record, lease)
            revision += 1
            return (.campaigned(.won(epoch: record.epoch)), true, nil)
        case .setEligible(let ids, let guardRecord):
            guard leader?.record == guardRecord else { return (.eligibleWritten(false), false, nil) }
            let sorted = ids.sorted()
            guard sorted != eligible else { return (.eligibleWritten(true), false, nil) }
            eligible = sorted
            revision += 1
            return (.eligibleWritten(true), true, nil)
        }
    }

    /// Whether `id` leads in `epoch` at etcd now: its record is the leader key, on a live lease.
    func names(_ id: String, epoch: UInt32) -> Bool {
        leader.map { $0.record.id == id && $0.record.epoch == epoch } ?? false
    }

    /// The lease every simulated coordinator asks for (etcd's minimum, the default).
    static let leaseSeconds: UInt64 = 2

    private func dropLeaderIfItsLeaseIsGone() -> Bool {
        guard let leader, leases[leader.lease] == nil else { return false }
        self.leader = nil
        revision += 1
        return true
    }
}
