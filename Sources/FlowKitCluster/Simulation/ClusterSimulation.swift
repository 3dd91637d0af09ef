import Logging
import Synchronization
import ZeroMQ

/// A whole cluster in one process, from one seed: the real coordinator and node machines over a
/// simulated network, disk and clock, with clients emitting events and faults injected, then the
/// checks of ``SimulationChecks``. The same seed replays the same run.
///
/// Nodes run their own entries' effects for real; the simulation's effects only wait to be
/// cancelled (they never send, so they change nothing the seed decides), and the effect runtime
/// registers and unregisters cancel ids synchronously, so what is running is deterministic too.
final class ClusterSimulation {
    let seed: UInt64
    let options: SimulationOptions
    var random: SeededRandom
    private(set) var now: UInt64 = 0
    var schedule = SimulationSchedule()
    var network: SimulatedNetwork
    let disk = SimulatedDisk()
    let trace: SimulationTrace
    let logger: Logger
    var coordinator: SimulatedCoordinator?
    var coordinatorIncarnation = 0
    var nodes: [SimulatedNode?]
    var nodeIncarnations: [Int]
    var history = SimulationHistory()
    var nextRequest: UInt64 = 1
    /// When the last sync asked for finishes.
    private var lastSyncDone: UInt64 = 0
    /// Processes that stopped running, and what arrived for them meanwhile, in order.
    var paused: [SimulatedProcess: [SimulationEvent]] = [:]
    let coordinatorConfiguration: CoordinatorConfiguration

    init(seed: UInt64, options: SimulationOptions) {
        self.seed = seed
        self.options = options
        var random = SeededRandom(seed: seed)
        let conditions = SimulatedNetwork.Conditions(
            drop: [0, 0.001, 0.01, 0.05].randomElement(using: &random)!,
            duplicate: [0, 0.001, 0.01].randomElement(using: &random)!,
            delay: 20...[200, 2_000, 20_000].randomElement(using: &random)!
        )
        self.random = random
        self.network = SimulatedNetwork(conditions: conditions)
        self.trace = SimulationTrace(capacity: options.traceLines)
        self.logger = Logger(label: "simulation") { [trace] label in SimulationLogHandler(trace: trace, label: label) }
        self.nodes = Array(repeating: nil, count: options.nodes)
        self.nodeIncarnations = Array(repeating: 0, count: options.nodes)
        var configuration = CoordinatorConfiguration()
        configuration.dedupWindow = 4_096
        self.coordinatorConfiguration = configuration
    }

    /// Runs the seed: start, load and faults for ``SimulationOptions/activeSeconds``, then every
    /// fault healed and every process running until ``SimulationOptions/settleSeconds`` later.
    func run() async throws -> [SimulationFailure] {
        trace.note(at: 0, "seed \(seed): \(options.nodes) nodes, network \(network.conditions)")
        try await startCoordinator()
        for node in 0..<options.nodes { startNode(node) }
        let activeEnd = UInt64(options.activeSeconds * 1_000_000)
        let end = activeEnd + UInt64(options.settleSeconds * 1_000_000)
        schedule.schedule(.clientEmit, at: 10_000)
        planFaults(until: activeEnd)
        var healed = false
        while let (time, event) = schedule.next(), time <= end {
            now = time
            trace.clock.store(time, ordering: .relaxed)
            if !healed, now >= activeEnd {
                healed = true
                try await healEverything()
            }
            if let process = event.process, paused[process] != nil {
                hold(event, for: process)
                continue
            }
            try await handle(event, activeEnd: activeEnd)
        }
        now = end
        let failures = await SimulationChecks(simulation: self).failures()
        for case let node? in nodes { node.replicas.shutDown() }
        return failures
    }

    // MARK: Events

    /// Keeps an event for a paused process until it resumes; of its timers, one of each.
    private func hold(_ event: SimulationEvent, for process: SimulatedProcess) {
        if let timer = event.timer, paused[process]!.contains(where: { $0.timer == timer }) { return }
        paused[process]!.append(event)
    }

    private func handle(_ event: SimulationEvent, activeEnd: UInt64) async throws {
        switch event {
        case .deliver(let packet):
            try await deliver(packet)
        case .nodeTick(let index, let incarnation):
            guard let node = nodes[index], node.incarnation == incarnation else { return }
            perform(node.machine.tick(now: now), on: node)
            schedule.schedule(.nodeTick(node: index, incarnation: incarnation), at: now + 50_000)
        case .coordinatorHeartbeat(let incarnation):
            guard let coordinator, coordinator.incarnation == incarnation else { return }
            try await perform([coordinator.machine.heartbeat(now: now)], on: coordinator)
            schedule.schedule(.coordinatorHeartbeat(incarnation: incarnation), at: now + 100_000)
        case .coordinatorStatus(let incarnation):
            guard let coordinator, coordinator.incarnation == incarnation else { return }
            try await perform(coordinator.machine.status(now: now, changedDigests: [:], instances: 0), on: coordinator)
            schedule.schedule(.coordinatorStatus(incarnation: incarnation), at: now + 1_000_000)
        case .commitDone(let incarnation, let group, let succeeded):
            // A coordinator that crashed meanwhile never synced the group: it is lost with it.
            guard let coordinator, coordinator.incarnation == incarnation else { return }
            if options.bug == .acknowledgeBeforeSync {
                // Already acknowledged when the sync was asked for; the write lands now, or never.
                // (A refused sync left a hole the machine never heard of; nothing after it lands.)
                if succeeded, group.records.first?.seq == disk.log.lastSeq + 1 { try disk.log.append(group.records) }
                return
            }
            if succeeded {
                try disk.log.append(group.records)
                try disk.log.commit()
                trace.note(at: now, "c: synced \(group.entries.first?.seq ?? 0)…\(group.lastSeq ?? 0)")
                try await perform(coordinator.machine.committed(group, now: now), on: coordinator)
            } else {
                trace.note(at: now, "c: the disk refused a commit")
                try await perform(coordinator.machine.failed(group, error: SimulatedDiskFull(), now: now), on: coordinator)
            }
        case .clientEmit:
            emit()
            if now < activeEnd {
                schedule.schedule(.clientEmit, at: now + UInt64.random(in: 1...options.meanEmitInterval * 2, using: &random))
            }
        case .fault(let fault):
            try await inject(fault)
        }
    }

    private func deliver(_ packet: Packet) async throws {
        switch packet.to {
        case .coordinatorSubmit, .coordinatorSync:
            guard let coordinator, coordinator.incarnation == packet.incarnation else { return }
            if packet.to == .coordinatorSubmit {
                try await perform(coordinator.machine.receive([packet.message], now: now), on: coordinator)
            } else if let (peer, body) = RouterEnvelope.split(packet.message), let from = packet.from {
                for frames in await coordinator.answerSync(body) {
                    send(Message(parts: frames), to: .nodeSync(from), incarnation: SimulatedNode.parse(identity: peer.identity)?.incarnation ?? -1)
                }
            }
        case .nodeSubmit(let index), .nodeSync(let index), .nodeSubscriber(let index), .nodeClient(let index):
            guard let node = nodes[index], node.incarnation == packet.incarnation else { return }
            let actions: [NodeMachine.Action]
            switch packet.to {
            case .nodeSubmit:
                actions = node.machine.receiveFromCoordinator([packet.message], now: now)
            case .nodeSync:
                actions = node.machine.receiveSync([SyncReply(packet.message)], now: now)
            case .nodeSubscriber:
                if options.bug == .applyAheadOfGaps, let entries = try? EntriesMessage(frames: packet.message.parts).entries {
                    perform([.apply(entries.filter { $0.seq > node.lastApplied + 1 })], on: node)
                }
                actions = node.machine.receivePublished([packet.message], now: now)
            default:
                actions = node.machine.receiveFromClients([packet.message], now: now)
            }
            perform(actions, on: node)
        case .clients:
            break
        }
    }

    /// Sends a message over the simulated network.
    func send(_ message: Message, to socket: SimulatedSocket, incarnation: Int, from: Int? = nil) {
        // Links between the coordinator and a node are the ones faults touch.
        let link: Int? = switch socket {
        case .coordinatorSubmit, .coordinatorSync: from
        case .nodeSubmit(let node), .nodeSync(let node), .nodeSubscriber(let node): node
        case .nodeClient, .clients: nil
        }
        for time in network.arrivals(now: now, link: link, using: &random) {
            schedule.schedule(.deliver(Packet(to: socket, incarnation: incarnation, from: from, message: message)), at: time)
        }
    }

    // MARK: Carrying out the machines' actions

    func perform(_ actions: [CoordinatorMachine.Action], on coordinator: SimulatedCoordinator) async throws {
        for action in actions {
            switch action {
            case .reply(let frames, let peer):
                guard let (node, incarnation) = SimulatedNode.parse(identity: peer.identity) else { continue }
                send(Message(parts: frames), to: .nodeSubmit(node), incarnation: incarnation)
            case .publish(let frames, _):
                for case let node? in nodes {
                    send(Message(parts: frames), to: .nodeSubscriber(node.index), incarnation: node.incarnation)
                }
            case .commit(let group):
                // One writer: syncs finish in the order they were asked for.
                let done = max(now + UInt64.random(in: 100...options.maxSyncMicros, using: &random), lastSyncDone + 1)
                lastSyncDone = done
                schedule.schedule(.commitDone(incarnation: coordinator.incarnation, group, succeeded: !disk.isFull), at: done)
                if options.bug == .acknowledgeBeforeSync {
                    try await perform(coordinator.machine.committed(group, now: now), on: coordinator)
                }
            case .replicate(let entries):
                await coordinator.replica.applyNow(entries)
            case .decodeReport(let body, let peer):
                do {
                    try await perform(coordinator.machine.report(try NodeReportMessage(frames: body), now: now), on: coordinator)
                } catch {
                    try await perform([coordinator.machine.reject(error, from: peer, now: now)], on: coordinator)
                }
            case .proposeEligible:
                // The simulated cluster has one coordinator, which never leads others.
                coordinator.machine.eligibleWriteFailed()
            }
        }
    }

    func perform(_ actions: [NodeMachine.Action], on node: SimulatedNode) {
        for action in actions {
            switch action {
            case .submit(let frames):
                send(Message(parts: [node.identity] + frames), to: .coordinatorSubmit, incarnation: coordinatorIncarnation, from: node.index)
            case .requestSync(let frames):
                send(Message(parts: [node.identity] + frames), to: .coordinatorSync, incarnation: coordinatorIncarnation, from: node.index)
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
                    pendingSubmissions: node.machine.submissions.count, connected: node.machine.isConnected(now: now), digestSeq: 0
                )
                let message = NodeReportMessage(node: UInt32(node.index + 1), applied: node.machine.applied, time: now, report: report)
                send(Message(parts: [node.identity] + message.frames), to: .coordinatorSubmit, incarnation: coordinatorIncarnation, from: node.index)
            case .answerQuery, .answerStatus:
                break
            case .switchCoordinator, .greetEveryCoordinator:
                break  // one coordinator: never asked
            }
        }
    }
}

struct SimulatedDiskFull: Error, CustomStringConvertible {
    var description: String { "no space left on the simulated disk" }
}
