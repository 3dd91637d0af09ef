/// Decides which effects move where when a node process goes down: the coordinator's half of
/// a takeover (docs/EFFECTS.md).
///
/// Pure: the coordinator's replica says who owns what (``EffectOwnership``), the membership who is
/// live, and the planner answers with the takeovers to order. An owner is taken over when it is
/// not live (its reports stopped for the lease, its node restarted as a new process, or it never
/// said hello to this leader), once the replica has applied every entry the owner submitted, and
/// not again until the replica has applied the takeovers ordered for it.
struct TakeoverPlanner {
    /// One instance's move.
    struct Move: Equatable {
        var address: String
        var to: EffectOwner
    }

    /// What the replica last said, for the status.
    private(set) var ownership = EffectOwnership()
    /// The last takeover ordered for each owner: it is not planned again until the replica has
    /// applied it.
    private var awaited: [EffectOwner: UInt64] = [:]
    /// The owners of effects that were not live at the last plan.
    private var notLiveAtPlan: Set<EffectOwner> = []
    /// Owners whose effects could not all move (no live node runs their flow), each alarmed once.
    private(set) var stranded: Set<EffectOwner> = []
    /// Instances taken over in this coordinator's term.
    private(set) var takenOver = 0
    /// Effects' submissions refused in this term because their instance had been taken over.
    var staleRefused = 0

    /// The moves for every owner the replica lists as orphaned (not in the live set it was asked
    /// about), by owner.
    ///
    /// - Parameters:
    ///   - live: The node processes alive now, with the flows each runs; a restarted node is in it
    ///     under its new session.
    ///   - lastSeq: The last seq ordered for an owner's submissions, if known.
    ///   - mayAct: Whether enough time passed since this coordinator began leading for every live
    ///     node to have said hello to it.
    /// - Returns: The moves for each owner to take over now, and the instances that have nowhere
    ///   to go (their owners are retried at the next status).
    mutating func plan(
        _ ownership: EffectOwnership, live: [(owner: EffectOwner, flows: [String])], lastSeq: (EffectOwner) -> UInt64?, mayAct: Bool
    ) -> (moves: [(from: EffectOwner, moves: [Move])], stranded: [(from: EffectOwner, addresses: [String])]) {
        self.ownership = ownership
        awaited = awaited.filter { ownership.applied < $0.value }
        let liveOwners = Set(live.map(\.owner))
        notLiveAtPlan = Set(ownership.counts.keys.filter { !liveOwners.contains($0) })
        guard mayAct else { return ([], []) }
        let candidates = live.sorted { ($0.owner.node, $0.owner.session) < ($1.owner.node, $1.owner.session) }
        var moves: [(from: EffectOwner, moves: [Move])] = []
        var strandedNow: [(from: EffectOwner, addresses: [String])] = []
        for (owner, addresses) in ownership.orphaned.sorted(by: { ($0.key.node, $0.key.session) < ($1.key.node, $1.key.session) }) {
            guard !liveOwners.contains(owner), awaited[owner] == nil, ownership.applied >= lastSeq(owner) ?? 0 else { continue }
            var planned: [Move] = []
            var nowhere: [String] = []
            for address in addresses {
                let flow = (try? Address(parsing: address))?.flow ?? ""
                let hosts = candidates.filter { $0.flows.contains(flow) }
                guard !hosts.isEmpty else {
                    nowhere.append(address)
                    continue
                }
                planned.append(Move(address: address, to: hosts[Int(Self.spread(address) % UInt64(hosts.count))].owner))
            }
            if !planned.isEmpty { moves.append((owner, planned)) }
            if nowhere.isEmpty {
                stranded.remove(owner)
            } else if stranded.insert(owner).inserted {
                strandedNow.append((owner, nowhere))
            }
        }
        return (moves, strandedNow)
    }

    /// Whether an owner of effects that was live at the last plan is not live now: a plan then
    /// need not wait for the next status interval.
    func lapsed(live: Set<EffectOwner>) -> Bool {
        ownership.counts.keys.contains { !live.contains($0) && !notLiveAtPlan.contains($0) }
    }

    /// Notes the takeovers ordered for `owner`, the last at `seq`.
    mutating func ordered(_ count: Int, for owner: EffectOwner, lastSeq seq: UInt64) {
        awaited[owner] = seq
        takenOver += count
    }

    /// Where an instance's effects go among the live hosts of its flow: a hash of its address
    /// (FNV-1a), so one node's instances spread over the others.
    static func spread(_ address: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in address.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
