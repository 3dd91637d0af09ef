import CoreMetrics
import Logging
/// What the coordinator knows of its nodes, and keeps for its status and alarms. Only the
/// coordinator machine's methods about nodes, in this file, touch it.
struct NodeOversight {
    fileprivate var membership: Membership
    fileprivate var lastStatus: (time: UInt64, head: UInt64)
    /// Entries of the log found too large for any message (while recovering, or serving them).
    fileprivate(set) var quarantinedEntries = 0
    /// The alarm for them, published with the next status: subscribers connect after recovery.
    fileprivate var unannouncedQuarantine: Alarm?
    /// Whose effects move where when a node process goes down.
    var takeovers = TakeoverPlanner()

    init(configuration: CoordinatorConfiguration, head: UInt64, now: UInt64) {
        membership = Membership(
            timeout: UInt64(configuration.nodeTimeout.microseconds),
            stallTimeout: UInt64(configuration.stallTimeout.microseconds),
            forgetAfter: UInt64(configuration.forgetDownNodesAfter.microseconds)
        )
        // A new leader has heard from no node yet: newer versions wait until every live one has
        // had the node timeout to say hello.
        membership.holdVersionsBack(until: now + membership.timeout)
        lastStatus = (now, head)
    }

    /// The version of each flow the live nodes agree on (``VersionAgreement``).
    var versionAgreement: VersionAgreement { membership.agreement }
}

extension CoordinatorMachine {
    // MARK: Nodes: hellos, reports, status, alarms

    /// The protocol version to publish in: the oldest a live node speaks
    /// (``VersionAgreement/oldestProtocol``).
    var publishProtocol: UInt8 { oversight.versionAgreement.oldestProtocol }

    /// A node's HELLO: it is a member, and hears the term and the head in a WELCOME.
    mutating func hello(_ hello: HelloMessage, from peer: RouterEnvelope, now: UInt64) -> [Action] {
        var actions: [Action] = []
        if let replaced = oversight.membership.hello(
            node: hello.node, session: hello.session, info: hello.info, peer: peer.identity, protocolVersion: peer.protocolVersion, now: now
        ),
            let owned = oversight.takeovers.ownership.counts[replaced]
        {
            observations.log(.warning, "\(hello.info.name) restarted as a new process: the effects of \(owned) instance(s) its previous process owned are taken over")
        }
        observations.log(.info, 
            "node said hello",
            ["flowkit.node": "\(hello.info.name)", "flowkit.node.endpoint": "\(hello.info.clientEndpoint)"]
        )
        let welcome = WelcomeMessage(
            epoch: intake.epoch,
            head: committedHead,
            info: CoordinatorInfo(firstSeq: firstSeq, dedupWindow: configuration.dedupWindow)
        )
        actions.append(.reply(welcome.frames, to: peer))
        return actions
    }

    /// Whether the connection `peer` speaks for `node` (and, when given, its process `session`):
    /// it said HELLO as that node, and the node has said none since on another connection.
    ///
    /// - Throws: `helloFirst` for a connection that said no HELLO (or whose node said one since on
    ///   another), `forbidden` for one that said HELLO as another node or process.
    func checkSpeaker(_ peer: RouterEnvelope, for node: UInt32, session: UInt64? = nil, in message: StaticString) throws {
        guard let speaker = oversight.membership.speaker(peer.identity) else {
            throw ProtocolError(.helloFirst, "a \(message) on a connection that has not said HELLO (or whose node has said it since on another): say HELLO, then resend")
        }
        guard speaker.node == node, session == nil || speaker.session == session else {
            let named = session.map { "node \(node), session \($0)" } ?? "node \(node)"
            throw ProtocolError(.forbidden, "a \(message) names \(named), but its connection said HELLO as node \(speaker.node), session \(speaker.session)")
        }
    }

    /// Whether the ACKs for `message` list what it got ordered: yes, unless its node's process
    /// (the same session) said in its HELLO that it learns that from the entries.
    func acknowledgesOrdered(_ message: SubmitMessage) -> Bool {
        guard let member = oversight.membership.members[message.origin], member.session == message.session else { return true }
        return member.info.ackOrdered ?? true
    }

    /// A node's report, decoded: its progress (its digests are compared off the loop, by a
    /// ``DivergenceCheck``).
    mutating func report(_ report: NodeReportMessage, now: UInt64) -> [Action] {
        oversight.membership.report(report, head: committedHead, now: now)
        return []
    }

    /// Divergences a ``DivergenceCheck`` found: counted, and each published as an ALARM.
    mutating func diverged(_ divergences: [DigestReferences.Divergence]) -> [Action] {
        oversight.membership.noteDivergences(divergences.count)
        var alarms: [Action] = []
        for divergence in divergences { alarms.append(raise(divergence)) }
        return alarms
    }

    /// Every status interval: alarms for nodes gone down or stalled, takeovers of the effects of
    /// node processes no longer live, then the status.
    ///
    /// - Parameters:
    ///   - instances: How many instances the coordinator's replica holds.
    ///   - ownership: Who owns effects of which instances, as the replica knows it, with the
    ///     instances of the owners not in ``liveOwners(now:)`` when it was asked.
    mutating func status(now: UInt64, instances: Int, ownership: EffectOwnership = EffectOwnership()) -> [Action] {
        observations.flushTrace()
        let head = committedHead
        let seconds = Double(now &- oversight.lastStatus.time) / 1_000_000
        let rate = seconds > 0 ? Double(head - min(head, oversight.lastStatus.head)) / seconds : 0
        oversight.lastStatus = (now, head)
        var actions: [Action] = []
        let liveness = oversight.membership.takeChangesInLiveness(now: now)
        for member in liveness.down {
            let message = "\(member.info.name) (node \(member.id)) has not reported for \(configuration.nodeTimeout); it counts as down"
            observations.log(.warning, "\(message)")
            actions.append(publish(Alarm(kind: .nodeDown, message: message, seq: member.applied)))
        }
        for member in liveness.forgotten {
            observations.log(.notice, 
                "forgetting a node down for \(configuration.forgetDownNodesAfter)",
                ["flowkit.node": "\(member.info.name)", "flowkit.node.id": "\(member.id)"]
            )
        }
        for stalled in oversight.membership.takeNewStalls(head: head, now: now) {
            observations.count(\.stalls, 1)
            let message = "\(stalled.info.name) has applied nothing for \(configuration.stallTimeout) at seq \(stalled.applied), \(head - min(head, stalled.applied)) behind the head"
            observations.log(.error, "STALLED: \(message)")
            actions.append(publish(Alarm(kind: .nodeStalled, message: message, seq: stalled.applied)))
        }
        for (member, unreadable) in oversight.membership.takeNewUnreadable() {
            let message = "\(member.info.name) (node \(member.id)) stopped applying: \(unreadable)"
            observations.log(.error, "VERSION UNREADABLE: \(message)")
            actions.append(publish(Alarm(kind: .versionUnreadable, message: message, seq: unreadable.seq)))
        }
        if let quarantine = oversight.unannouncedQuarantine {
            oversight.unannouncedQuarantine = nil
            actions.append(publish(quarantine))
        }
        actions += takeOver(ownership, now: now)
        let status = status(now: now, entriesPerSecond: rate)
        if let replication, let progress = status.replication {
            actions += noteReplication(progress, blocking: replication.blocking(now: now))
        }
        observations.gauge(\.head, Double(head))
        observations.gauge(\.pendingCommit, Double(intake.pending.entries.count))
        observations.gauge(\.nodesAlive, Double(status.nodes.filter(\.alive).count))
        observations.gauge(\.nodesStalled, Double(status.nodes.filter(\.stalled).count))
        observations.gauge(\.instances, Double(instances))
        actions.append(.publish(ClusterStatusMessage(status: status).frames, entries: 0))
        return actions
    }

    /// The cluster as the coordinator sees it now.
    func status(now: UInt64, entriesPerSecond: Double = 0) -> ClusterStatus {
        var status = oversight.membership.status(
            epoch: intake.epoch, head: committedHead, firstSeq: firstSeq, entriesPerSecond: entriesPerSecond,
            quarantined: oversight.quarantinedEntries, owned: oversight.takeovers.ownership.counts, now: now
        )
        status.replication = replication?.status(leaderSince: leaderSince, now: now)
        status.takeovers = oversight.takeovers.takenOver
        status.staleSubmissions = oversight.takeovers.staleRefused
        return status
    }

    /// The node processes alive now: the replica lists the instances of every other owner.
    func liveOwners(now: UInt64) -> Set<EffectOwner> {
        Set(oversight.membership.liveOwners(now: now).map(\.owner))
    }

    /// Whether a node process that owns effects stopped being live (its lease ran out, its node
    /// restarted as a new process) since the last status: the coordinator then holds a status round
    /// at once, so a takeover waits for the lease and not also for the status interval.
    func ownerLapsed(now: UInt64) -> Bool {
        oversight.takeovers.lapsed(live: liveOwners(now: now))
    }

    /// Orders takeovers of the effects of node processes no longer live (``TakeoverPlanner``), once
    /// this coordinator has led for a lease: every live node has said hello to it by then.
    private mutating func takeOver(_ ownership: EffectOwnership, now: UInt64) -> [Action] {
        let mayAct = now >= leaderSince + UInt64(configuration.nodeTimeout.microseconds)
        let sequencer = intake.sequencer
        let (moves, stranded) = oversight.takeovers.plan(
            ownership, live: oversight.membership.liveOwners(now: now), lastSeq: { sequencer.lastSeq(of: $0) }, mayAct: mayAct
        )
        var actions: [Action] = []
        for (from, planned) in moves {
            let last = orderTakeovers(planned, from: from, now: now)
            oversight.takeovers.ordered(planned.count, for: from, lastSeq: last)
            observations.count(\.takeovers, planned.count)
            let targets = Dictionary(grouping: planned, by: \.to).map { "\($0.value.count) to \(oversight.membership.name(of: $0.key))" }.sorted()
            let message = "\(oversight.membership.name(of: from)) is down: the effects of \(planned.count) instance(s) move, "
                + targets.joined(separator: ", ")
            observations.log(.warning, "TAKEOVER: \(message)")
            actions.append(publish(Alarm(kind: .effectsTakenOver, message: message, seq: last)))
        }
        for (from, addresses) in stranded {
            observations.count(\.effectsLost, addresses.count)
            let listed = addresses.prefix(5).joined(separator: ", ") + (addresses.count > 5 ? ", …" : "")
            let message = "\(oversight.membership.name(of: from)) is down, and no live node runs the flow of \(addresses.count) of its instances "
                + "(\(listed)): their effects stop until one does"
            observations.log(.error, "EFFECTS STRANDED: \(message)")
            actions.append(publish(Alarm(kind: .effectsLost, message: message)))
        }
        if !moves.isEmpty, let commit = nextCommit() { actions.append(commit) }
        return actions
    }

    /// Records the replication gauges, and raises an alarm when in-sync standbys start holding
    /// back every commit (or others do).
    private mutating func noteReplication(_ status: ReplicationStatus, blocking: [String]) -> [Action] {
        observations.gauge(\.inSync, Double(status.coordinators.filter(\.inSync).count))
        observations.gauge(\.written, Double(status.written))
        for coordinator in status.coordinators where coordinator.role == "standby" {
            observations.standbyLag(coordinator.id, UInt64(coordinator.lag))
        }
        defer { blockingReported = blocking }
        guard !blocking.isEmpty, blocking != blockingReported else { return [] }
        let message = "commits wait for \(blocking.joined(separator: ", ")): in sync but behind the leader's log for over "
            + "\(replication!.lagTimeout / 1_000) ms, and the in-sync set is at its minimum (\(replication!.minInSync)); nothing is acknowledged until they catch up"
        observations.log(.error, "COMMITS BLOCKED: \(message)")
        return [publish(Alarm(kind: .commitsBlocked, message: message, seq: committedHead))]
    }

    /// Notes entries quarantined at `seqs`, found while recovering.
    mutating func noteQuarantined(_ seqs: [UInt64]) {
        guard !seqs.isEmpty else { return }
        oversight.quarantinedEntries += seqs.count
        observations.count(\.quarantined, seqs.count)
        let listed = seqs.prefix(10).map(String.init).joined(separator: ", ") + (seqs.count > 10 ? ", …" : "")
        let message = "\(seqs.count) log entries are too large for any message (seq \(listed)): every replica skips them; their events are not applied"
        observations.log(.critical, "QUARANTINED: \(message)")
        oversight.unannouncedQuarantine = Alarm(kind: .entryQuarantined, message: message, seq: seqs.first)
    }

    mutating func raise(_ divergence: DigestReferences.Divergence) -> Action {
        observations.count(\.divergences, 1)
        let message = "replicas diverged at \(divergence.address) after seq \(divergence.seq): "
            + divergence.digests.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        observations.log(.critical, "DIVERGENCE: \(message)")
        return publish(Alarm(kind: .divergence, message: message, address: divergence.address, seq: divergence.seq, digests: divergence.digests))
    }
}
