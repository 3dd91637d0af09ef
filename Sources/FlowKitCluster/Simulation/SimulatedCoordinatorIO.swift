import ZeroMQ

/// A simulated coordinator's I/O for the ``CoordinatorInterpreter`` the processes run: the
/// simulated network for replies and publications, the simulated disk (a write syncs later, in
/// simulated time), the simulated election service, and the replica and report decoding as events
/// of their own, as the process does them off the ordering path.
final class SimulatedCoordinatorIO: CoordinatorIO {
    unowned let simulation: ClusterSimulation
    unowned let coordinator: SimulatedCoordinator

    init(simulation: ClusterSimulation, coordinator: SimulatedCoordinator) {
        self.simulation = simulation
        self.coordinator = coordinator
    }

    var now: UInt64 { simulation.now }

    func mayAct() -> Bool {
        !coordinator.isReplicated || coordinator.election!.mayLead(now: now)
    }

    func reply(_ frames: [[UInt8]], to peer: RouterEnvelope) -> Bool {
        noteActing("replied")
        guard let (node, incarnation) = SimulatedNode.parse(identity: peer.identity) else { return true }
        simulation.send(
            Message(parts: peer.translated(frames)), to: .nodeSubmit(node, coordinator: coordinator.index), incarnation: incarnation, from: .coordinator(coordinator.index)
        )
        return true
    }

    func publish(_ frames: [[UInt8]]) -> Bool {
        noteActing("published")
        for case let node? in simulation.nodes {
            simulation.send(Message(parts: frames), to: .nodeSubscriber(node.index), incarnation: node.incarnation, from: .coordinator(coordinator.index))
        }
        return true
    }

    /// The write syncs in simulated time (a full disk refuses the sync), and meanwhile a
    /// replicated leader's held FETCHes are answered with it (the process's sync server sends a
    /// group from its feed while the log syncs it).
    func write(_ group: PendingCommit) -> CoordinatorWrite {
        if !mayAct() {
            for entry in group.entries { simulation.history.fencedWrites[entry.seq] = entry }
        }
        let write = coordinator.write(group.records)
        let done = simulation.syncDone(coordinator.disk)
        simulation.schedule.schedule(.commitDone(coordinator.index, incarnation: coordinator.incarnation, write: write, group), at: done)
        if coordinator.isReplicated {
            simulation.schedule.schedule(.coordinatorWork(coordinator.index, incarnation: coordinator.incarnation, .answerHeldFetches), at: now)
        }
        return .pending
    }

    func madeDurable(_ group: PendingCommit) {
        simulation.trace.note(at: now, "c\(coordinator.index): synced \(group.entries.first?.seq ?? 0)…\(group.lastSeq ?? 0)")
    }

    /// The process exits: a crash now, and its supervisor starts it again a second later.
    func stepDown(_ reason: String) {
        simulation.schedule.schedule(.coordinatorWork(coordinator.index, incarnation: coordinator.incarnation, .exit(reason)), at: now)
    }

    func acknowledged(_ entries: [Entry]) {}

    func replicate(_ entries: [Entry]) {
        simulation.schedule.schedule(.coordinatorWork(coordinator.index, incarnation: coordinator.incarnation, .replicate(entries)), at: now)
    }

    func queueReport(_ body: [[UInt8]], from peer: RouterEnvelope) -> RouterEnvelope? {
        simulation.schedule.schedule(.coordinatorWork(coordinator.index, incarnation: coordinator.incarnation, .decodeReport(body, peer)), at: now)
        return nil
    }

    /// Compared now, against every node's digests of the run (the coordinator's own replica hashes
    /// on the wall clock, so the simulation leaves it out); what diverged is alarmed as an event.
    func compare(_ digests: [ReportedDigest], reporter: String) {
        let found = simulation.divergence.compare(digests, reporter: reporter)
        guard !found.isEmpty else { return }
        simulation.schedule.schedule(.coordinatorWork(coordinator.index, incarnation: coordinator.incarnation, .diverged(found)), at: now)
    }

    func proposeEligible(_ set: Set<String>) -> Bool {
        guard coordinator.isReplicated, let record = coordinator.following else { return false }
        simulation.ask(coordinator, .setEligible(set, leader: record))
        return true
    }

    /// A leader acknowledged, published or replicated: only the leader the election service names may.
    func noteActing(_ what: String) {
        let etcd = simulation.etcd
        guard coordinator.isReplicated, let epoch = coordinator.machine?.epoch, !etcd.names(coordinator.id, epoch: epoch) else { return }
        // Once per coordinator and term: the first act tells the story.
        let fencing = simulation.history.fencing
        guard fencing.last?.hasPrefix("\(coordinator.id) ") != true || !fencing.last!.contains("epoch \(epoch) ") else { return }
        simulation.history.fencing.append(
            "\(coordinator.id) \(what) as the leader of epoch \(epoch) at \(SimulationTrace.format(now)) s, when etcd named \(etcd.leader.map { "\($0.record)" } ?? "no leader")"
        )
    }
}

/// What a simulated coordinator does off its ordering path, as an event of its own.
enum SimulatedCoordinatorWork {
    /// Committed entries reach the coordinator's replica.
    case replicate([Entry])
    /// A NODE_REPORT is decoded and taken in.
    case decodeReport([[UInt8]], RouterEnvelope)
    /// Nodes' digests disagree.
    case diverged([DigestReferences.Divergence])
    /// A group went to the log: the held FETCHes are answered with it while it syncs.
    case answerHeldFetches
    /// The coordinator stepped down for good (``CoordinatorIO/stepDown(_:)``): its process exits.
    case exit(String)
}

extension SimulatedCoordinator {
    /// Whether a FETCHED may leave now, as a reply or publication may (``SyncServer``'s fencing);
    /// noted as an act of the leader if it does.
    func mayReplicate(bug: InjectedBug?) -> Bool {
        guard bug == .replicatePastTheLease || io.mayAct() else { return false }
        io.noteActing("answered a standby's FETCH")
        return true
    }
}
