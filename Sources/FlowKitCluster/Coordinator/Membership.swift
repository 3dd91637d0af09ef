/// The coordinator's view of the nodes: who said hello, how far each has applied, what each
/// reported, and whether it is alive. (Whether two replicas hold different states for the same
/// instance after the same entry is ``DigestReferences``'s to tell.)
///
/// Pure: times are passed in, so liveness is tested without clocks or sockets.
struct Membership {
    struct Member {
        var id: UInt32
        var session: UInt64
        var info: NodeInfo
        var applied: UInt64 = 0
        /// How far behind the head it was when its last report arrived (the head moves on between
        /// reports; a report says nothing of what the node applied since).
        var lagAtReport: UInt64 = 0
        var lastSeen: UInt64
        var report: NodeReport?
        /// When its applied seq last moved, or it was last at the head.
        var progressAt: UInt64
        /// Whether the current stall has been alarmed.
        var stallAlarmed = false
        /// Whether the node's going down has been alarmed.
        var downAlarmed = false
        /// Whether the entry it reported it cannot read has been alarmed.
        var unreadableAlarmed = false
        /// The ROUTER identity of the connection that said its HELLO last: only that connection
        /// speaks for the node (nil until a HELLO).
        var peer: [UInt8]?
        /// The wire protocol version its HELLO came in.
        var protocolVersion: UInt8 = WireHeader.version
    }

    private(set) var members: [UInt32: Member] = [:]
    /// Which node each connection said HELLO as (the inverse of ``Member/peer``).
    private var nodeByPeer: [[UInt8]: UInt32] = [:]
    /// Microseconds without a report after which a node counts as down.
    let timeout: UInt64
    /// Microseconds behind the head without progress after which a live node counts as stalled.
    let stallTimeout: UInt64
    /// Microseconds without a report after which a down node is forgotten: it no longer counts in
    /// the status (its going down was alarmed).
    let forgetAfter: UInt64
    /// Divergences found so far (``noteDivergences(_:)``), for the status.
    private(set) var divergenceCount = 0
    /// The version of each flow its live nodes agree on, brought up to date whenever a node says
    /// hello, comes back or goes down (the intake reads it for every event above version 1).
    private(set) var agreement = VersionAgreement()

    /// How many nodes are remembered; past it, the one heard from least recently is forgotten, so
    /// HELLOs with made-up node ids (a misconfigured or hostile peer) cannot grow the table.
    let memberCapacity: Int

    init(
        timeout: UInt64,
        stallTimeout: UInt64 = 5_000_000,
        forgetAfter: UInt64 = 60_000_000,
        memberCapacity: Int = 1_024
    ) {
        self.timeout = timeout
        self.stallTimeout = stallTimeout
        self.forgetAfter = forgetAfter
        self.memberCapacity = memberCapacity
    }

    /// Until `time` (µs), every flow counts as agreed at version 1 only: a new leader's, which has
    /// not heard from every live node yet (``VersionAgreement/settlesAt``).
    mutating func holdVersionsBack(until time: UInt64) {
        agreement.settlesAt = time
    }

    /// For each flow some live node runs, the versions its live nodes write (what HELLO said).
    func flowVersions(now: UInt64) -> [String: ClusterStatus.FlowVersions] {
        var written: [String: [(node: String, version: UInt16)]] = [:]
        for member in members.values.sorted(by: { $0.id < $1.id }) where member.session != 0 && isAlive(member, now: now) {
            for flow in member.info.flows { written[flow, default: []].append((member.info.name, member.info.version(of: flow))) }
        }
        return written.mapValues { nodes in
            let agreed = nodes.map(\.version).min()!
            let newest = nodes.map(\.version).max()!
            return ClusterStatus.FlowVersions(
                agreed: agreed, newest: newest, behind: newest > agreed ? nodes.filter { $0.version == agreed }.map(\.node) : []
            )
        }
    }

    private mutating func updateAgreement(now: UInt64) {
        agreement.flows = flowVersions(now: now)
        let live = members.values.filter { $0.session != 0 && isAlive($0, now: now) }
        let oldest = min(live.map(\.protocolVersion).min() ?? WireHeader.spoken.upperBound, WireHeader.spoken.upperBound)
        agreement.oldestProtocol = oldest
        agreement.protocolBehind = live.filter { $0.protocolVersion == oldest && oldest < WireHeader.version }.sorted { $0.id < $1.id }.map(\.info.name)
    }

    /// Forgets the least recently seen members beyond the capacity, never `keeping`.
    private mutating func evictBeyondCapacity(keeping node: UInt32) {
        while members.count > memberCapacity {
            guard let oldest = members.values.filter({ $0.id != node }).min(by: { $0.lastSeen < $1.lastSeen }) else { return }
            forget(oldest.id)
        }
    }

    private mutating func forget(_ node: UInt32) {
        if let peer = members[node]?.peer, nodeByPeer[peer] == node { nodeByPeer[peer] = nil }
        members[node] = nil
    }

    /// The node, and its process's session, that the connection `peer` said HELLO as; nil for a
    /// connection that has not (or whose node said HELLO again on another connection since).
    func speaker(_ peer: [UInt8]) -> (node: UInt32, session: UInt64)? {
        guard let node = nodeByPeer[peer], let member = members[node], member.peer == peer else { return nil }
        return (node, member.session)
    }

    /// Records a node's hello.
    ///
    /// - Returns: The node's previous process, if this hello is from a new one (a restart): it is
    ///   no longer live, and its effects are taken over.
    /// - Parameter peer: The connection it came on: from now on the only one that speaks for `node`.
    ///   A connection speaks for one node: one that said HELLO as another before no longer does.
    @discardableResult
    mutating func hello(
        node: UInt32, session: UInt64, info: NodeInfo, peer: [UInt8], protocolVersion: UInt8 = WireHeader.version, now: UInt64
    ) -> EffectOwner? {
        var replaced: EffectOwner?
        if let previous = members[node]?.peer, nodeByPeer[previous] == node { nodeByPeer[previous] = nil }
        if let other = nodeByPeer[peer], other != node { members[other]?.peer = nil }
        if let previous = members[node], previous.session != session, previous.session != 0 {
            replaced = EffectOwner(node: node, session: previous.session)
        }
        if let existing = members[node], existing.session == session {
            members[node]!.info = info
            members[node]!.lastSeen = now
            members[node]!.downAlarmed = false
        } else {
            members[node] = Member(id: node, session: session, info: info, lastSeen: now, progressAt: now)
            evictBeyondCapacity(keeping: node)
        }
        members[node]!.peer = peer
        members[node]!.protocolVersion = protocolVersion
        nodeByPeer[peer] = node
        updateAgreement(now: now)
        return replaced
    }

    /// The node processes alive now (said hello, and reported within the timeout), with the flows
    /// each runs: where effects may move.
    func liveOwners(now: UInt64) -> [(owner: EffectOwner, flows: [String])] {
        members.values.filter { $0.session != 0 && isAlive($0, now: now) }.map { (EffectOwner(node: $0.id, session: $0.session), $0.info.flows) }
    }

    /// A node process by its node's name, and its session.
    func name(of owner: EffectOwner) -> String {
        let node = members[owner.node].map { "\($0.info.name) (node \(owner.node))" } ?? "node \(owner.node)"
        return node + " session " + String(String(owner.session, radix: 16).prefix(8))
    }

    /// Records a report (its digests are compared elsewhere).
    ///
    /// - Parameter head: The coordinator's durable head now.
    mutating func report(_ message: NodeReportMessage, head: UInt64, now: UInt64) {
        var member = members[message.node] ?? Member(
            id: message.node, session: 0,
            info: NodeInfo(name: message.report.name, clientEndpoint: "", flows: [], pid: 0),
            lastSeen: now, progressAt: now
        )
        let cameBack = !isAlive(member, now: now)
        if message.applied != member.applied || message.applied >= head {
            member.progressAt = now
            member.stallAlarmed = false
        }
        member.applied = message.applied
        member.lagAtReport = head > message.applied ? head - message.applied : 0
        member.lastSeen = now
        member.downAlarmed = false
        member.report = message.report
        members[message.node] = member
        evictBeyondCapacity(keeping: message.node)
        if cameBack && member.session != 0 { updateAgreement(now: now) }
    }

    /// Counts divergences found, for the status.
    mutating func noteDivergences(_ count: Int) {
        divergenceCount += count
    }

    func isAlive(_ member: Member, now: UInt64) -> Bool {
        now < member.lastSeen || now - member.lastSeen <= timeout
    }

    /// Alive, behind `head`, and without progress for the stall timeout.
    func isStalled(_ member: Member, head: UInt64, now: UInt64) -> Bool {
        isAlive(member, now: now) && member.applied < head && now >= member.progressAt && now - member.progressAt >= stallTimeout
    }

    /// The nodes that went down since the last call, each alarmed once, and the nodes down for
    /// ``forgetAfter``, which are forgotten now.
    mutating func takeChangesInLiveness(now: UInt64) -> (down: [Member], forgotten: [Member]) {
        var down: [Member] = []
        var forgotten: [Member] = []
        for (id, member) in members where !isAlive(member, now: now) {
            if now >= member.lastSeen, now - member.lastSeen >= forgetAfter {
                forget(id)
                forgotten.append(member)
            } else if !member.downAlarmed {
                members[id]!.downAlarmed = true
                down.append(member)
            }
        }
        if !down.isEmpty || !forgotten.isEmpty { updateAgreement(now: now) }
        return (down.sorted { $0.id < $1.id }, forgotten.sorted { $0.id < $1.id })
    }

    /// The nodes that became stalled since the last call: each stall is alarmed once.
    mutating func takeNewStalls(head: UInt64, now: UInt64) -> [Member] {
        var found: [Member] = []
        for (id, member) in members where !member.stallAlarmed && isStalled(member, head: head, now: now) {
            members[id]!.stallAlarmed = true
            found.append(member)
        }
        return found.sorted { $0.id < $1.id }
    }

    /// Live nodes whose reports newly name an entry their build cannot read (``NodeReport/unreadable``).
    mutating func takeNewUnreadable() -> [(member: Member, unreadable: UnreadableEntry)] {
        var found: [(member: Member, unreadable: UnreadableEntry)] = []
        for (id, member) in members {
            guard let unreadable = member.report?.unreadable else {
                members[id]!.unreadableAlarmed = false
                continue
            }
            guard !member.unreadableAlarmed else { continue }
            members[id]!.unreadableAlarmed = true
            found.append((member, unreadable))
        }
        return found.sorted { $0.member.id < $1.member.id }
    }

    /// The status published on `$status`.
    func status(
        epoch: UInt32, head: UInt64, firstSeq: UInt64, entriesPerSecond: Double, quarantined: Int = 0, owned: [EffectOwner: Int] = [:], now: UInt64
    ) -> ClusterStatus {
        var status = ClusterStatus(
            epoch: epoch,
            head: head,
            firstSeq: firstSeq,
            entriesPerSecond: entriesPerSecond,
            nodes: members.values.sorted { $0.id < $1.id }.map { member in
                var node = ClusterStatus.Node(
                    id: member.id,
                    name: member.info.name,
                    clientEndpoint: member.info.clientEndpoint,
                    applied: member.applied,
                    lag: member.lagAtReport,
                    alive: isAlive(member, now: now),
                    lastSeenMillis: now > member.lastSeen ? (now - member.lastSeen) / 1_000 : 0,
                    digest: member.report?.digest ?? "",
                    instances: member.report?.instances ?? 0,
                    runningEffects: member.report?.runningEffects ?? 0,
                    pendingSubmissions: member.report?.pendingSubmissions ?? 0,
                    digestSeq: member.report?.digestSeq ?? 0,
                    stalled: isStalled(member, head: head, now: now)
                )
                node.session = member.session == 0 ? nil : String(member.session, radix: 16)
                node.ownedInstances = owned[EffectOwner(node: member.id, session: member.session)] ?? 0
                node.unreadable = member.report?.unreadable
                node.instancesAtRest = member.report?.instancesAtRest
                node.instancesUnhashed = member.report?.instancesUnhashed
                node.flowVersions = member.info.flowVersions
                node.protocolVersion = member.protocolVersion < WireHeader.version ? member.protocolVersion : nil
                return node
            },
            divergences: divergenceCount,
            quarantined: quarantined
        )
        let versions = flowVersions(now: now).filter { $0.value.newest > 1 }
        status.versions = versions.isEmpty ? nil : versions
        return status
    }
}
