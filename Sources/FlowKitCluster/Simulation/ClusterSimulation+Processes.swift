import Foundation
import Logging
import ZeroMQ

extension ClusterSimulation {
    // MARK: Processes

    /// Alarms, takeovers and the status, from what the coordinator's replica says of ownership.
    func statusRound(_ coordinator: SimulatedCoordinator, now: UInt64) async {
        guard let interpreter = coordinator.interpreter else { return }
        let ownership = options.bug == .noTakeover  // the coordinator never hears of an owner to take over
            ? EffectOwnership() : await coordinator.replica.ownership(live: interpreter.machine.liveOwners(now: now))
        coordinator.interpreter?.run { $0.status(now: now, instances: 0, ownership: ownership) }
    }

    func startCoordinator(_ index: Int) async throws {
        coordinatorIncarnations[index] += 1
        let incarnation = coordinatorIncarnations[index]
        var logger = self.logger
        logger[metadataKey: "coordinator"] = "\(index)"
        let started: SimulatedCoordinator
        if isReplicated {
            started = try await SimulatedCoordinator.startReplicated(
                simulation: self, index: index, incarnation: incarnation, disk: disks[index], configuration: coordinatorConfiguration, logger: logger
            )
            trace.note(at: now, "\(started.id): started, log end \(disks[index].log.lastSeq)")
        } else {
            started = try await SimulatedCoordinator.start(
                simulation: self, index: index, incarnation: incarnation, disk: disks[index], configuration: coordinatorConfiguration, logger: logger, now: now,
                bug: options.bug
            )
            trace.note(at: now, "c: started, epoch \(started.machine!.epoch), head \(started.machine!.durableHead)")
        }
        coordinators[index] = started
        schedule.schedule(.coordinatorHeartbeat(index, incarnation: incarnation), at: now + 100_000)
        schedule.schedule(.coordinatorStatus(index, incarnation: incarnation), at: now + 1_000_000)
        if isReplicated {
            schedule.schedule(.electionTick(index, incarnation: incarnation), at: now + 20_000)
            schedule.schedule(.syncTick(index, incarnation: incarnation), at: now + 50_000)
            try await feedElection(started) { $0.start(now: now) }
            sendView(to: index)
        }
    }

    func startNode(_ index: Int) {
        nodeIncarnations[index] += 1
        var configuration = NodeConfiguration(id: UInt32(index + 1), coordinator: SimulatedCoordinator.endpoints(0), name: "node-\(index)")
        configuration.otherCoordinators = coordinators.indices.dropFirst().map(SimulatedCoordinator.endpoints)
        configuration.joinThroughSnapshot = random.next() % 2 == 0
        // Reports twice a second against the coordinator's 2 s node timeout here: a node is
        // declared down when it is (paused, cut off, crashed), not for a report or two the network lost.
        configuration.reportInterval = .milliseconds(500)
        let node = SimulatedNode(
            simulation: self, index: index, incarnation: nodeIncarnations[index], session: random.next() | 1, configuration: configuration,
            registry: builds.registry(ofNode: index), logger: nodeLogger(index), bug: options.bug
        )
        nodes[index] = node
        trace.note(at: now, "n\(index): started, run \(node.incarnation)")
        resumeFromLocalSnapshot(node)
        node.interpreter.run { $0.start(now: now) }
        schedule.schedule(.nodeTick(node: index, incarnation: node.incarnation), at: now + UInt64.random(in: 1...50_000, using: &random))
    }

    /// A client's request to a random node: an event with a token no other event carries (one in
    /// four starts an effect), or now and then a cancel of an earlier effect of the same instance.
    /// Eight instances are hot; one append in three goes to one of 64 cold ones instead (no
    /// effects), so that nodes hold instances that change now and then, as most do: what a
    /// node's local snapshots of changes (deltas) are for.
    func emit() {
        let index = Int.random(in: 0..<options.nodes, using: &random)
        let request = nextRequest
        nextRequest += 1
        var address = "sim/k\(random.next() % 8)"
        let wait: WaitMode = random.next() % 4 == 0 ? .applied : .ordered
        let frames: [[UInt8]]
        switch random.next() % 8 {
        case 0 where !(history.work[address] ?? []).isEmpty:
            let token = history.work[address]!.randomElement(using: &random)!
            frames = ClientRequest.cancel(request: request, wait: wait, address: address, id: token).frames
        case let choice:
            let token = "t\(request)"
            let event: SimulationFlow.Event = choice < 3 ? .work(token) : .append(token)
            if choice >= 3, coldAddresses.next() % 3 == 0 { address = "sim/c\(coldAddresses.next() % 64)" }
            history.noteEmit(request: request, token: token, node: index, address: address, startsWork: choice < 3)
            let payload = SimulationFlow.payload(event, build: builds.nodes[index])
            frames = ClientRequest.emit(request: request, wait: wait, codec: .json, address: address, payload: payload).frames
        }
        guard let node = nodes[index] else { return }  // a client of a node that is down gets no answer
        send(Message(parts: [Array("client".utf8), []] + frames), to: .nodeClient(index), incarnation: node.incarnation)
    }

    /// The logger a node's machine logs through: the trace, each line marked with the node.
    private func nodeLogger(_ index: Int) -> Logger {
        var logger = self.logger
        logger[metadataKey: "node"] = "\(index)"
        return logger
    }

    /// Keeps an event for a paused process until it resumes; of its timers, one of each.
    func hold(_ event: SimulationEvent, for process: SimulatedProcess) {
        if let timer = event.timer, paused[process]!.contains(where: { $0.timer == timer }) { return }
        paused[process]!.append(event)
    }

    // MARK: Faults

    /// Every coordinator, as processes.
    var coordinatorProcesses: [SimulatedProcess] { coordinators.indices.map { .coordinator($0) } }

    /// Everything a coordinator talks to.
    func everyone(but process: SimulatedProcess) -> [SimulatedProcess] {
        (coordinatorProcesses + nodes.indices.map { .node($0) } + (isReplicated ? [.etcd] : [])).filter { $0 != process }
    }

    /// Faults at random moments of the active period, each undone a while later; and in every
    /// seed, two forged submissions from a stranger.
    func planFaults(until end: UInt64) {
        if options.upgrade { planUpgrade(until: end) }
        for _ in 0..<2 {
            let at = UInt64.random(in: 200_000...max(200_001, end), using: &random)
            schedule.schedule(.fault(.forge(node: Int.random(in: 0..<options.nodes, using: &random))), at: at)
        }
        for _ in 0..<options.faults {
            let at = UInt64.random(in: 200_000...max(200_001, end), using: &random)
            let lasts = UInt64.random(in: 100_000...3_000_000, using: &random)
            let node = Int.random(in: 0..<options.nodes, using: &random)
            if isReplicated {
                // Two in three strike whoever leads when they strike (or this one, if no one does).
                let coordinator = Int.random(in: 0..<options.coordinators, using: &random)
                let strikesLeader = random.next() % 3 != 0
                let kind = ReplicatedFault.allCases[Int(random.next() % UInt64(ReplicatedFault.allCases.count))]
                schedule.schedule(.fault(.strike(kind, coordinator: coordinator, strikesLeader: strikesLeader, node: node, lasts: lasts)), at: at)
                continue
            }
            let (fault, undo): (SimulatedFault, SimulatedFault) = switch random.next() % 6 {
            case 0: (.crashCoordinator(0), .restartCoordinator(0))
            case 1: (.crashNode(node), .restartNode(node))
            case 2: (.cut(.node(node), from: [.coordinator(0)]), .mend(.node(node), from: [.coordinator(0)]))
            case 3: (.diskFull(0), .diskRecovers(0))
            case 4: (.pause(.node(node)), .resume(.node(node)))
            default: (.pause(.coordinator(0)), .resume(.coordinator(0)))
            }
            schedule.schedule(.fault(fault), at: at)
            schedule.schedule(.fault(undo), at: min(at + lasts, end))
        }
    }

    /// A fault planned among replicated coordinators, and what undoes it: decided when it strikes,
    /// so it can strike whoever leads then.
    func resolve(_ kind: ReplicatedFault, coordinator: Int, strikesLeader: Bool, node: Int) -> (SimulatedFault, SimulatedFault) {
        let leader = strikesLeader ? coordinators.firstIndex { $0?.machine != nil } : nil
        let target = leader ?? coordinator
        let process = SimulatedProcess.coordinator(target)
        switch kind {
        case .crashCoordinator: return (.crashCoordinator(target), .restartCoordinator(target))
        case .powerLoss: return (.powerLoss, .powerRestored)
        case .pauseCoordinator: return (.pause(process), .resume(process))
        case .cutCoordinatorFromEtcd: return (.cut(process, from: [.etcd]), .mend(process, from: [.etcd]))
        case .isolateCoordinator: return (.cut(process, from: everyone(but: process)), .mend(process, from: everyone(but: process)))
        case .fillCoordinatorDisk: return (.diskFull(target), .diskRecovers(target))
        case .crashNode: return (.crashNode(node), .restartNode(node))
        case .cutNode: return (.cut(.node(node), from: coordinatorProcesses), .mend(.node(node), from: coordinatorProcesses))
        case .pauseNode: return (.pause(.node(node)), .resume(.node(node)))
        }
    }

    func inject(_ fault: SimulatedFault) async throws {
        if case .strike(let kind, let coordinator, let strikesLeader, let node, let lasts) = fault {
            let (fault, undo) = resolve(kind, coordinator: coordinator, strikesLeader: strikesLeader, node: node)
            schedule.schedule(.fault(undo), at: min(now + lasts, activeEnd))
            try await inject(fault)
            return
        }
        trace.note(at: now, "FAULT: \(fault)")
        history.faults.append("\(Double(now) / 1_000_000) s: \(fault)")
        switch fault {
        case .crashCoordinator(let index):
            crashCoordinator(index)
        case .restartCoordinator(let index):
            if coordinators[index] == nil { try await startCoordinator(index) }
        case .powerLoss:
            for index in coordinators.indices { try await inject(.crashCoordinator(index)) }
        case .powerRestored:
            for index in coordinators.indices { try await inject(.restartCoordinator(index)) }
        case .crashNode(let index):
            nodes[index]?.replicas.shutDown()  // its effects die with it
            nodes[index] = nil
            paused[.node(index)] = nil
        case .restartNode(let index):
            if nodes[index] == nil { startNode(index) }
        case .cut(let process, let others):
            network.cut(process, from: others)
        case .mend(let process, let others):
            network.mend(process, from: others)
            // A watch broken by the cut reads the election service again.
            if process == .etcd || others.contains(.etcd), case .coordinator(let index) = process { sendView(to: index) }
        case .diskFull(let index):
            disks[index].isFull = true
        case .diskRecovers(let index):
            disks[index].isFull = false
        case .pause(let process):
            // A process that is down cannot be stopped; its restart runs.
            let isRunning = switch process {
            case .coordinator(let index): coordinators[index] != nil
            case .node(let index): nodes[index] != nil
            case .etcd: false
            }
            if isRunning, paused[process] == nil { paused[process] = [] }
        case .resume(let process):
            resume(process)
        case .forge(let index):
            forge(asNode: index)
        case .upgradeCoordinator:
            try await upgradeCoordinator()
        case .upgradeNode(let index):
            try await upgradeNode(index)
        case .strike:
            break
        }
    }

    /// The coordinator's process is gone: what it had not synced, and what was in flight to it.
    func crashCoordinator(_ index: Int) {
        coordinators[index] = nil
        coordinatorIncarnations[index] += 1
        paused[.coordinator(index)] = nil
    }

    /// A stranger's connection (not a node's: its identity names no process) says HELLO as node
    /// 1000 + k, then submits an event whose token is `forged-k` as node `index`'s running
    /// process, with submission ids among those the node uses. Only the node's own connection
    /// speaks for it, so nothing of it may be ordered (``SimulationChecks``).
    private func forge(asNode index: Int) {
        guard let victim = nodes[index] else { return }
        forgeries += 1
        let stranger = Array("stranger-\(forgeries)".utf8)
        let info = NodeInfo(name: "stranger-\(forgeries)", clientEndpoint: "sim://stranger", flows: ["sim"], pid: 0)
        let hello = HelloMessage(node: UInt32(1_000 + forgeries), session: 1, info: info).frames
        let submissions = (1...3).map { _ in
            let payload = (try? JSONEncoder().encode(SimulationFlow.Event.append("forged-\(forgeries)"))).map { [UInt8]($0) } ?? []
            return Submission(
                submission: UInt64.random(in: 1...64, using: &random), kind: .event, codec: .json, submittedAt: now, address: "sim/k0", payload: payload
            )
        }
        let submit = SubmitMessage(origin: victim.machine.configuration.id, session: victim.machine.session, submissions: submissions).frames
        for index in coordinators.indices {
            for frames in [hello, submit] {
                send(Message(parts: [stranger] + frames), to: .coordinatorSubmit(index), incarnation: coordinatorIncarnations[index])
            }
        }
    }

    /// A paused process runs again: what arrived meanwhile is handled now, in order. Among
    /// replicated coordinators, the messages go before the timers: a leader woken past its lease
    /// may handle a FETCH or a SUBMIT before its election notices, the race fencing must win.
    func resume(_ process: SimulatedProcess) {
        guard var held = paused.removeValue(forKey: process) else { return }
        if isReplicated, case .coordinator = process {
            held = held.filter { $0.timer == nil } + held.filter { $0.timer != nil }
        }
        for event in held { schedule.schedule(event, at: now) }
    }

    /// The end of the active period: every fault undone, every process running again.
    func healEverything() async throws {
        trace.note(at: now, "the active period ends: healing everything")
        network.mendAll()
        for disk in disks { disk.isFull = false }
        for process in paused.keys.sorted(by: { $0.description < $1.description }) { resume(process) }
        for index in coordinators.indices where coordinators[index] == nil { try await startCoordinator(index) }
        for index in nodes.indices where nodes[index] == nil { startNode(index) }
        if isReplicated { broadcastViews() }
    }
}

/// The faults a run with replicated coordinators draws from.
enum ReplicatedFault: CaseIterable {
    case crashCoordinator, pauseCoordinator, cutCoordinatorFromEtcd, isolateCoordinator, fillCoordinatorDisk, crashNode, cutNode, pauseNode, powerLoss
}
