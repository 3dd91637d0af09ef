/// Who leads the coordinators: the record the leader keeps in the election service while it leads.
package struct LeaderRecord: Codable, Equatable, Sendable, CustomStringConvertible {
    /// The leader's coordinator id.
    package var id: String
    /// Its term: the fencing token, larger than every earlier leader's.
    package var epoch: UInt32
    /// Where nodes and the other coordinators reach it.
    package var endpoints: CoordinatorEndpoints

    package init(id: String, epoch: UInt32, endpoints: CoordinatorEndpoints) {
        self.id = id
        self.epoch = epoch
        self.endpoints = endpoints
    }

    package var description: String { "\(id) (epoch \(epoch))" }
}

/// One coordinator's part in the election, as a state machine without I/O.
///
/// Leadership lives in an election service (etcd): a leader key attached to the leader's lease,
/// an epoch counter that only grows, and the set of coordinators eligible to lead (those in sync
/// with the leader's log). The machine decides when to ask the service for a lease, a renewal or
/// a campaign, and what this coordinator may do meanwhile; ``CoordinatorElection`` carries the
/// requests out against etcd, a simulation against a model of it.
///
/// **Fencing.** A lease granted or renewed by a request sent at `t` expires at the service no
/// earlier than `t + ttl`, so the machine counts its lease from the moment it asked. A leader
/// acts (acknowledges, publishes) only while ``mayLead(now:)``: until `safety` before that
/// deadline. Past it, it steps down on its own, before the service can let anyone else lead,
/// whether or not it has heard anything (a leader stopped by SIGSTOP wakes up past its deadline
/// and acts on nothing). Times are microseconds of a clock that keeps counting while the process
/// is stopped (``LeaseClock``).
package struct ElectionMachine {
    package struct Settings: Sendable {
        /// This coordinator's id.
        package var id: String
        /// Where it can be reached, written in the leader record when it leads.
        package var endpoints: CoordinatorEndpoints
        /// Seconds the lease lives without a renewal: how long a dead leader keeps its seat.
        package var leaseSeconds: Int64
        /// How often the lease is renewed (a quarter of the lease by default).
        package var renewEvery: UInt64
        /// How long before the lease's deadline a leader stops acting.
        package var safety: UInt64
        /// How long to wait before asking again after the service failed to answer.
        package var retryEvery: UInt64

        package init(id: String, endpoints: CoordinatorEndpoints, leaseSeconds: Int64 = 2) {
            self.id = id
            self.endpoints = endpoints
            self.leaseSeconds = leaseSeconds
            self.renewEvery = UInt64(leaseSeconds) * 1_000_000 / 4
            self.safety = UInt64(leaseSeconds) * 1_000_000 / 8
            self.retryEvery = 100_000
        }
    }

    package enum Role: Equatable, Sendable, CustomStringConvertible {
        /// No leader is known, or this coordinator waits to be allowed to lead.
        case seeking
        /// Another coordinator leads.
        case standingBy(LeaderRecord)
        /// This coordinator leads, in the record's epoch.
        case leading(LeaderRecord)

        package var leader: LeaderRecord? {
            switch self {
            case .seeking: nil
            case .standingBy(let record), .leading(let record): record
            }
        }

        package var description: String {
            switch self {
            case .seeking: "seeking a leader"
            case .standingBy(let leader): "standing by for \(leader)"
            case .leading(let record): "leading in epoch \(record.epoch)"
            }
        }
    }

    /// What the machine asks of the election service; each is answered by one input.
    package enum Request: Equatable, Sendable {
        /// Grant a lease of ``Settings/leaseSeconds``: answer with ``granted(lease:seconds:askedAt:now:)``.
        case grantLease
        /// Renew the lease: ``renewed(seconds:askedAt:now:)`` or ``leaseLost(now:)``.
        case renewLease(Int64)
        /// Become the leader under the lease, if no one leads and this coordinator is eligible:
        /// ``campaigned(_:now:)``.
        case campaign(lease: Int64, candidate: LeaderRecord)
        /// Give the lease back (the coordinator is stopping): its leader key goes at once.
        case revokeLease(Int64)
    }

    package enum Action: Equatable, Sendable {
        case request(Request)
        /// This coordinator's role changed.
        case role(Role)
    }

    /// How a campaign ended.
    package enum CampaignOutcome: Equatable, Sendable {
        /// This coordinator leads, in `epoch`.
        case won(epoch: UInt32)
        /// Someone else leads (or no one, if the service changed under the campaign), or this
        /// coordinator is not eligible.
        case lost(leader: LeaderRecord?)
    }

    package let settings: Settings
    package private(set) var role: Role = .seeking
    /// The leader the service names, as last heard (``observed(leader:eligible:now:)``).
    package private(set) var knownLeader: LeaderRecord?
    /// Whether this coordinator may lead: it is in the eligible set (or there is none yet).
    package private(set) var isEligible = true
    /// The lease and when it runs out, counted from when it was asked for.
    private(set) var lease: (id: Int64, deadline: UInt64)?
    /// Requests in flight, so none is asked for twice.
    private var asking: Set<RequestKind> = []
    private var nextRenewal: UInt64 = 0
    /// After a failure: not before this time.
    private var notBefore: UInt64 = 0
    private var stopping = false
    /// The term this coordinator last won, and the lease its record went on.
    private var won: (epoch: UInt32, lease: Int64)?
    /// The lowest epoch this coordinator may lead in: above every epoch its log holds, so a log
    /// written before the election service knew the cluster (one coordinator, its own epochs)
    /// never sees an epoch twice.
    package var minimumEpoch: UInt32 = 1

    private enum RequestKind: Hashable { case grant, renew, campaign }

    package init(settings: Settings) {
        self.settings = settings
    }

    private var ttl: UInt64 { UInt64(settings.leaseSeconds) * 1_000_000 }

    /// Whether this coordinator may act as the leader now: it leads, and its lease has more than
    /// ``Settings/safety`` to run.
    package func mayLead(now: UInt64) -> Bool {
        guard case .leading = role, let lease else { return false }
        return now + settings.safety < lease.deadline
    }

    // MARK: Inputs

    /// Starts: asks for a lease.
    package mutating func start(now: UInt64) -> [Action] {
        tick(now: now)
    }

    /// Time passed: renew, step down, ask again, campaign, as due.
    package mutating func tick(now: UInt64) -> [Action] {
        guard !stopping else { return [] }
        var actions: [Action] = []
        if let lease, now + settings.safety >= lease.deadline {
            // The lease may be gone at the service: stop acting on it, and start again.
            self.lease = nil
            asking.remove(.renew)
            if case .leading = role { actions += become(.seeking) }
        }
        guard now >= notBefore else { return actions }
        if let lease {
            if now >= nextRenewal, !asking.contains(.renew) {
                asking.insert(.renew)
                actions.append(.request(.renewLease(lease.id)))
            }
        } else if !asking.contains(.grant) {
            asking.insert(.grant)
            actions.append(.request(.grantLease))
        }
        actions += campaignIfDue(now: now)
        return actions
    }

    /// The service granted a lease asked for at `askedAt`.
    package mutating func granted(lease id: Int64, seconds: Int64, askedAt: UInt64, now: UInt64) -> [Action] {
        asking.remove(.grant)
        guard !stopping else { return [.request(.revokeLease(id))] }
        lease = (id, askedAt + UInt64(max(seconds, 0)) * 1_000_000)
        nextRenewal = now + settings.renewEvery
        return campaignIfDue(now: now)
    }

    /// The service renewed the lease, from a request sent at `askedAt`.
    package mutating func renewed(seconds: Int64, askedAt: UInt64, now: UInt64) -> [Action] {
        asking.remove(.renew)
        guard lease != nil else { return [] }
        lease!.deadline = max(lease!.deadline, askedAt + UInt64(max(seconds, 0)) * 1_000_000)
        nextRenewal = now + settings.renewEvery
        return []
    }

    /// The service says the lease is gone: whatever this coordinator led under it, it no longer does.
    package mutating func leaseLost(now: UInt64) -> [Action] {
        asking.remove(.renew)
        lease = nil
        var actions: [Action] = []
        if case .leading = role { actions += become(.seeking) }
        return actions + tick(now: now)
    }

    /// A request failed without an answer (the service is unreachable): try again a little later.
    /// The lease's deadline keeps running meanwhile.
    package mutating func requestFailed(_ request: Request, now: UInt64) -> [Action] {
        switch request {
        case .grantLease: asking.remove(.grant)
        case .renewLease: asking.remove(.renew)
        case .campaign: asking.remove(.campaign)
        case .revokeLease: break
        }
        notBefore = now + settings.retryEvery
        return []
    }

    /// A campaign's outcome.
    package mutating func campaigned(_ outcome: CampaignOutcome, now: UInt64) -> [Action] {
        asking.remove(.campaign)
        switch outcome {
        case .won(let epoch):
            let record = LeaderRecord(id: settings.id, epoch: epoch, endpoints: settings.endpoints)
            knownLeader = record
            if let lease { won = (epoch, lease.id) }
            guard mayLeadUnderLease(now: now) else { return [] }  // the lease ran out meanwhile
            return become(.leading(record))
        case .lost(let leader):
            // Lost to no one: the service changed under the campaign; look again shortly.
            if leader == nil { notBefore = now + settings.retryEvery }
            return observed(leader: leader, eligible: isEligible, now: now)
        }
    }

    /// What the service holds now (from a read or a watch): the leader, if any, and whether this
    /// coordinator is eligible to lead.
    package mutating func observed(leader: LeaderRecord?, eligible: Bool, now: UInt64) -> [Action] {
        knownLeader = leader
        isEligible = eligible
        var actions: [Action] = []
        switch (role, leader) {
        case (.leading(let mine), let leader) where leader != mine:
            // Someone else's record, or none: this term is over, whatever the lease says.
            actions += become(leader.map { .standingBy($0) } ?? .seeking)
        case (.leading, _):
            break
        case (_, let leader?) where leader.id != settings.id:
            if role != .standingBy(leader) { actions += become(.standingBy(leader)) }
        case (_, _):
            // No leader, or a record of this coordinator's from an earlier lease: seek.
            if role != .seeking { actions += become(.seeking) }
            if let leader, let won, leader.epoch == won.epoch, lease?.id == won.lease {
                // Its own record, on the lease it still renews, for a term it does not lead: it
                // stepped down on a view older than its win, or won after its lease ran out by its
                // own count. Left alone the record would name it forever while no one leads; the
                // lease goes back, the record with it, and the election runs again.
                self.won = nil
                lease = nil
                asking.remove(.renew)
                actions.append(.request(.revokeLease(won.lease)))
                return actions + tick(now: now)
            }
        }
        return actions + campaignIfDue(now: now)
    }

    /// The coordinator is stopping: give the lease back, so another leads at once.
    package mutating func stop() -> [Action] {
        stopping = true
        var actions: [Action] = []
        if case .leading = role { actions += become(.seeking) }
        if let lease { actions.append(.request(.revokeLease(lease.id))) }
        lease = nil
        return actions
    }

    // MARK: Helpers

    private func mayLeadUnderLease(now: UInt64) -> Bool {
        guard let lease else { return false }
        return now + settings.safety < lease.deadline
    }

    private mutating func campaignIfDue(now: UInt64) -> [Action] {
        // Only while no one holds the seat: a record of this coordinator's own from an earlier lease
        // (before a restart) is waited out like anyone else's.
        guard !stopping, now >= notBefore, knownLeader == nil, isEligible, let lease, !asking.contains(.campaign) else { return [] }
        asking.insert(.campaign)
        let candidate = LeaderRecord(id: settings.id, epoch: minimumEpoch, endpoints: settings.endpoints)
        return [.request(.campaign(lease: lease.id, candidate: candidate))]
    }

    private mutating func become(_ role: Role) -> [Action] {
        self.role = role
        return [.role(role)]
    }
}
