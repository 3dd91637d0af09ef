import Logging
import Synchronization
import ZeroMQ

extension ClusterSimulation {
    // MARK: Carrying out the machines' actions

    func perform(_ actions: [CoordinatorMachine.Action], on coordinator: SimulatedCoordinator) async throws {
        // Fencing, as the core does it: a leader acts only while its lease holds.
        let mayAct = !coordinator.isReplicated || options.bug == .fenceOnlyOnTimer || coordinator.election!.mayLead(now: now)
        for action in actions {
            switch action {
            case .reply where !mayAct, .publish where !mayAct:
                history.fenced += 1
            case .reply(let frames, let peer):
                noteActing(coordinator, "replied")
                guard let (node, incarnation) = SimulatedNode.parse(identity: peer.identity) else { continue }
                send(Message(parts: frames), to: .nodeSubmit(node, coordinator: coordinator.index), incarnation: incarnation, from: .coordinator(coordinator.index))
            case .publish(let frames, _):
                noteActing(coordinator, "published")
                for case let node? in nodes {
                    send(Message(parts: frames), to: .nodeSubscriber(node.index), incarnation: node.incarnation, from: .coordinator(coordinator.index))
                }
            case .commit(let group):
                let write = coordinator.write(group.records)
                schedule.schedule(.commitDone(coordinator.index, incarnation: coordinator.incarnation, write: write, group), at: syncDone(coordinator.disk))
                if options.bug == .acknowledgeBeforeSync, coordinator.machine != nil {
                    try await perform(coordinator.machine!.committed(group, now: now), on: coordinator)
                }
            case .replicate(let entries):
                if coordinator.isReplicated {
                    await coordinator.applyCommitted(through: entries.last?.seq ?? 0)
                } else {
                    await coordinator.replica.applyNow(entries)
                }
            case .decodeReport(let body, let peer):
                guard coordinator.machine != nil else { continue }
                do {
                    try await perform(coordinator.machine!.report(try NodeReportMessage(frames: body), now: now), on: coordinator)
                } catch {
                    try await perform([coordinator.machine!.reject(error, from: peer, now: now)], on: coordinator)
                }
            case .proposeEligible(let set):
                guard coordinator.isReplicated, let record = coordinator.following else {
                    coordinator.machine?.eligibleWriteFailed()  // one coordinator never leads others
                    continue
                }
                ask(coordinator, .setEligible(set, leader: record))
            }
        }
    }

    /// When a write asked of `disk` now is synced: one writer, syncs finish in the order asked.
    func syncDone(_ disk: SimulatedDisk) -> UInt64 {
        let done = max(now + UInt64.random(in: 100...options.maxSyncMicros, using: &random), disk.lastSyncDone + 1)
        disk.lastSyncDone = done
        return done
    }

    /// A leader acknowledged or published: only the leader the election service names may.
    private func noteActing(_ coordinator: SimulatedCoordinator, _ what: String) {
        guard coordinator.isReplicated, let epoch = coordinator.machine?.epoch, !etcd.names(coordinator.id, epoch: epoch) else { return }
        // Once per coordinator and term: the first act tells the story.
        guard history.fencing.last?.hasPrefix("\(coordinator.id) ") != true || !history.fencing.last!.contains("epoch \(epoch) ") else { return }
        history.fencing.append(
            "\(coordinator.id) \(what) as the leader of epoch \(epoch) at \(SimulationTrace.format(now)) s, when etcd named \(etcd.leader.map { "\($0.record)" } ?? "no leader")"
        )
    }

    func perform(_ actions: [NodeMachine.Action], on node: SimulatedNode) {
        /// The coordinator the node submits to and repairs from now.
        func current() -> Int { node.machine.currentCoordinator }
        for action in actions {
            switch action {
            case .submit(let frames):
                sendToCoordinator(frames, from: node, to: .coordinatorSubmit(current()))
            case .requestSync(let frames):
                sendToCoordinator(frames, from: node, to: .coordinatorSync(current()))
            case .greetEveryCoordinator(let frames):
                for index in coordinators.indices { sendToCoordinator(frames, from: node, to: .coordinatorSubmit(index)) }
            case .switchCoordinator:
                break  // the sockets to send on follow the machine's choice
            case .reply(let reply, _):
                history.note(reply, from: node.index, at: now)
            case .apply(let entries):
                for entry in entries {
                    if entry.seq != node.lastApplied + 1 {
                        history.violations.append("node \(node.index) (run \(node.incarnation)) applied seq \(entry.seq) after \(node.lastApplied)")
                    }
                    node.lastApplied = entry.seq
                    let isOwn = node.machine.isOwn(entry)
                    node.replicas.apply(entry, runEffects: isOwn)
                    if isOwn { history.noteEffects(of: entry, ranOn: node.index, session: node.machine.session) }
                }
            case .restore(let seq, let instances):
                do {
                    try node.replicas.importStates(instances)
                    node.lastApplied = seq
                    trace.note(at: now, "n\(node.index): restored a snapshot at \(seq)")
                    perform(node.machine.restored(true, now: now), on: node)
                } catch {
                    perform(node.machine.restored(false, now: now), on: node)
                }
            case .report:
                // Progress only: digests are compared by the checks, against the log replayed.
                let report = NodeReport(
                    name: "node-\(node.index)", digest: "", digests: [:], instances: node.replicas.count, runningEffects: 0, effectsLost: 0,
                    pendingSubmissions: node.machine.pendingSubmissions, connected: node.machine.isConnected(now: now), digestSeq: 0
                )
                let message = NodeReportMessage(node: UInt32(node.index + 1), applied: node.machine.applied, time: now, report: report)
                sendToCoordinator(message.frames, from: node, to: .coordinatorSubmit(current()))
            case .answerQuery, .answerStatus:
                break
            }
        }
    }

    private func sendToCoordinator(_ frames: [[UInt8]], from node: SimulatedNode, to socket: SimulatedSocket) {
        guard case .coordinator(let index)? = socket.process else { return }
        send(Message(parts: [node.identity] + frames), to: socket, incarnation: coordinatorIncarnations[index], from: .node(node.index))
    }
}
