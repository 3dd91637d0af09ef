import Logging
import Synchronization
import ZeroMQ

/// A whole cluster in one process, from one seed: the real coordinator and node machines over a
/// simulated network, disk and clock, with clients emitting events and faults injected, then the
/// checks of ``SimulationChecks``. The same seed replays the same run.
///
/// With several coordinators (``SimulationOptions/coordinators``) each runs its real election and
/// standby machines too, against a simulated election service (``SimulatedEtcd``), and leads in
/// turn as faults strike the leader.
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
    /// Each coordinator's disk: it outlives the coordinator's crashes.
    let disks: [SimulatedDisk]
    /// The election service, for replicated coordinators.
    let etcd = SimulatedEtcd()
    let trace: SimulationTrace
    let logger: Logger
    var coordinators: [SimulatedCoordinator?]
    var coordinatorIncarnations: [Int]
    var nodes: [SimulatedNode?]
    var nodeIncarnations: [Int]
    /// Each node's local snapshot files, which outlive its crashes, and the draws that decide
    /// when one is taken, whether its save fails and whether a restart resumes from them
    /// (``tick(_:)``).
    lazy var localSnapshots = SimulatedLocalSnapshots(seed: seed)
    /// The draws that send some appends to a cold instance (``emit()``), apart from the rest.
    lazy var coldAddresses = SeededRandom(seed: seed ^ 0xC01D_ADD2_E55E)
    /// Which build of the flow each process runs: 1, until a rolling upgrade moves it to 2.
    lazy var builds = SimulationBuilds(options: options)
    var history = SimulationHistory()
    /// What every coordinator's machine counts, across runs and terms (acts fenced, say).
    let coordinatorCounters = ClusterCounters()
    /// The nodes' reported digests, compared as the coordinator compares them: one table for the
    /// run, whichever coordinator a report reached.
    let divergence = DivergenceCheck()
    var nextRequest: UInt64 = 1
    /// How many forged SUBMITs a stranger sent (``SimulatedFault/forge(node:)``).
    var forgeries = 0
    var nextElectionRequest: UInt64 = 1
    /// Processes that stopped running, and what arrived for them meanwhile, in order.
    var paused: [SimulatedProcess: [SimulationEvent]] = [:]
    let coordinatorConfiguration: CoordinatorConfiguration
    /// When the active period ends: faults are undone by then.
    private(set) var activeEnd: UInt64 = 0

    var isReplicated: Bool { options.coordinators > 1 }

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
        self.disks = (0..<options.coordinators).map { _ in SimulatedDisk() }
        self.coordinators = Array(repeating: nil, count: options.coordinators)
        self.coordinatorIncarnations = Array(repeating: 0, count: options.coordinators)
        self.nodes = Array(repeating: nil, count: options.nodes)
        self.nodeIncarnations = Array(repeating: 0, count: options.nodes)
        var configuration = CoordinatorConfiguration()
        configuration.dedupWindow = 4_096
        // Shorter than a process's default, so that a node paused or cut off for part of the
        // active period is taken over (faults last 0.1 to 3 s); nodes report twice a second.
        configuration.nodeTimeout = .seconds(2)
        self.coordinatorConfiguration = configuration
    }

    /// Runs the seed: start, load and faults for ``SimulationOptions/activeSeconds``, then every
    /// fault healed and every process running until ``SimulationOptions/settleSeconds`` later.
    func run() async throws -> [SimulationFailure] {
        let coordinatorsNote = isReplicated ? "\(options.coordinators) coordinators, " : ""
        trace.note(at: 0, "seed \(seed): \(coordinatorsNote)\(options.nodes) nodes, network \(network.conditions)")
        for index in coordinators.indices { try await startCoordinator(index) }
        for node in 0..<options.nodes { startNode(node) }
        activeEnd = UInt64(options.activeSeconds * 1_000_000)
        let end = activeEnd + UInt64(options.settleSeconds * 1_000_000)
        schedule.schedule(.clientEmit, at: 10_000)
        planFaults(until: activeEnd)
        var healed = false
        while let (time, event) = schedule.next(), time <= end {
            now = time
            trace.clock.store(time, ordering: .relaxed)
            // Leases run out at their moment, before anything else happens then.
            if isReplicated, etcd.expire(now: now) { broadcastViews() }
            if !healed, now >= activeEnd {
                healed = true
                try await healEverything()
            }
            if let process = event.process, paused[process] != nil {
                hold(event, for: process)
                continue
            }
            try await handle(event)
        }
        now = end
        let failures = await SimulationChecks(simulation: self).failures()
        for case let node? in nodes { node.replicas.shutDown() }
        return failures
    }

    // MARK: Events

    private func handle(_ event: SimulationEvent) async throws {
        switch event {
        case .deliver(let packet):
            try await deliver(packet)
        case .nodeTick(let index, let incarnation):
            guard let node = nodes[index], node.incarnation == incarnation else { return }
            tick(node)
        case .nodeWork(let index, let incarnation, let work):
            guard let node = nodes[index], node.incarnation == incarnation else { return }
            carryOut(work, on: node)
        case .coordinatorHeartbeat(let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation) else { return }
            if let interpreter = coordinator.interpreter {
                interpreter.run { [$0.heartbeat(now: now)] }
                if isReplicated { interpreter.run { $0.tickReplication(now: now) } }
                // As a coordinator process does: a status round at once when an owner lapsed.
                if interpreter.machine.ownerLapsed(now: now) { await statusRound(coordinator, now: now) }
            }
            schedule.schedule(.coordinatorHeartbeat(index, incarnation: incarnation), at: now + 100_000)
        case .coordinatorStatus(let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation) else { return }
            await coordinator.compactIfDue(every: options.snapshotEvery, retain: options.retainEntries)
            await statusRound(coordinator, now: now)
            schedule.schedule(.coordinatorStatus(index, incarnation: incarnation), at: now + 1_000_000)
        case .electionTick(let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation) else { return }
            try await feedElection(coordinator) { $0.tick(now: now) }
            schedule.schedule(.electionTick(index, incarnation: incarnation), at: now + 20_000)
        case .syncTick(let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation) else { return }
            if coordinator.machine != nil {
                recheckHeldFetches(coordinator)
            } else {
                try await carryOut(coordinator.copy!.tick(now: now), on: coordinator)
            }
            schedule.schedule(.syncTick(index, incarnation: incarnation), at: now + 50_000)
        case .commitDone(let index, let incarnation, let write, let group):
            // A coordinator that crashed meanwhile never synced the group: it is lost with it.
            guard let coordinator = coordinator(index, incarnation) else { return }
            // Landed already: the coordinator stopped leading meanwhile. (With the injected bug
            // acknowledge-before-sync, a refused sync leaves a hole the machine never hears of;
            // nothing after it lands.)
            guard let landed = coordinator.land(write), let interpreter = coordinator.interpreter else { return }
            if !landed { trace.note(at: now, "c\(index): the disk refused a commit") }
            // Replicated, the group went to the standbys before this sync (``SimulatedCoordinatorIO/write(_:)``).
            interpreter.written(group, landed ? .success(()) : .failure(isReplicated ? LeaderSyncFailed(cause: SimulatedDiskFull()) : SimulatedDiskFull()))
            if landed, isReplicated { recheckHeldFetches(coordinator) }
        case .coordinatorWork(let index, let incarnation, let work):
            guard let coordinator = coordinator(index, incarnation) else { return }
            await carryOut(work, on: coordinator)
        case .copyWritten(let index, let incarnation, let write, let through, let lastEpoch):
            guard let coordinator = coordinator(index, incarnation), let landed = coordinator.land(write), coordinator.machine == nil else { return }
            if landed {
                try await carryOut(coordinator.copy!.appended(through: through, lastEpoch: lastEpoch, now: now), on: coordinator)
            } else {
                trace.note(at: now, "c\(index): the disk refused the leader's entries; fetching them again")
                let copy = coordinator.copy!
                try await carryOut(coordinator.copy!.truncated(durable: copy.durable, lastEpoch: copy.lastEpoch, now: now), on: coordinator)
            }
        case .electionRequest(let request, let id, let from, let incarnation):
            let (answer, changed, deadline) = etcd.handle(request, now: now)
            if let deadline { schedule.schedule(.leaseExpiry, at: deadline) }
            for time in network.arrivals(now: now, link: SimulatedLink(.etcd, .coordinator(from)), lossy: false, using: &random) {
                schedule.schedule(.electionAnswer(answer, id: id, to: from, incarnation: incarnation), at: time)
            }
            if changed { broadcastViews() }
        case .electionAnswer(let answer, let id, let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation), let asked = coordinator.electionRequests.removeValue(forKey: id) else { return }
            try await take(answer, to: asked.request, askedAt: asked.askedAt, on: coordinator)
        case .electionView(let view, let revision, let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation), revision > coordinator.viewRevision else { return }
            coordinator.viewRevision = revision
            try await feedElection(coordinator) { $0.observed(leader: view.leader, eligible: view.isEligible(coordinator.id), now: now) }
        case .electionTimeout(let id, let index, let incarnation):
            guard let coordinator = coordinator(index, incarnation), let asked = coordinator.electionRequests.removeValue(forKey: id) else { return }
            switch asked.request {
            case .election(let request):
                try await feedElection(coordinator) { $0.requestFailed(request, now: now) }
            case .setEligible(let set, _):
                coordinator.interpreter?.eligibleWritten(set, written: false)
            }
        case .leaseExpiry:
            break  // the loop expired what was due
        case .clientEmit:
            emit()
            if now < activeEnd {
                schedule.schedule(.clientEmit, at: now + UInt64.random(in: 1...options.meanEmitInterval * 2, using: &random))
            }
        case .fault(let fault):
            try await inject(fault)
        }
    }

    /// Replicated: the coordinator that leads, and may act as the leader, now.
    var finalLeader: SimulatedCoordinator? {
        coordinators.lazy.compactMap { $0 }.first { $0.machine != nil && $0.election?.mayLead(now: self.now) == true }
    }

    /// The disk whose log the checks hold the cluster to: the coordinator's, or the leader's.
    var checkedDisk: SimulatedDisk? { isReplicated ? finalLeader?.disk : disks[0] }

    /// The coordinator at `index`, if it is still the run `incarnation` names.
    func coordinator(_ index: Int, _ incarnation: Int) -> SimulatedCoordinator? {
        guard let coordinator = coordinators[index], coordinator.incarnation == incarnation else { return nil }
        return coordinator
    }

    private func deliver(_ packet: Packet) async throws {
        switch packet.to {
        case .coordinatorSubmit(let index):
            guard let coordinator = coordinator(index, packet.incarnation) else { return }
            if let interpreter = coordinator.interpreter {
                var message = options.bug == .trustTheSubmitOrigin ? asFromItsOrigin(packet.message) : packet.message
                if options.bug == .noFencing { message = withoutTerms(message) }
                interpreter.receive([message], now: now)
            } else {
                for reply in CoordinatorRole.redirections([packet.message], leader: coordinator.following) { replyToNode(reply, from: coordinator) }
            }
        case .coordinatorSync(let index):
            guard let coordinator = coordinator(index, packet.incarnation), let (peer, body) = RouterEnvelope.split(packet.message) else { return }
            let request: SyncRequest
            do {
                request = try SyncRequest(frames: body)
            } catch {
                let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
                sendSyncAnswer(ErrorReply(request: 0, error: protocolError).frames, to: peer, from: coordinator)
                return
            }
            if case .fetch(let fetch) = request, coordinator.isReplicated {
                try await serveFetch(fetch, from: peer, on: coordinator)
            } else {
                let answer = await coordinator.answerSync(request, maxReplay: options.snapshotEvery + options.retainEntries, bug: options.bug)
                for frames in answer { sendSyncAnswer(frames, to: peer, from: coordinator) }
            }
        case .coordinatorFetch(let index):
            guard let coordinator = coordinator(index, packet.incarnation) else { return }
            try await receiveFromLeader(packet.message.parts, on: coordinator)
        case .nodeSubmit(let index, _), .nodeSync(let index), .nodeSubscriber(let index), .nodeClient(let index):
            guard let node = nodes[index], node.incarnation == packet.incarnation else { return }
            switch packet.to {
            case .nodeSubmit(_, let coordinator):
                node.interpreter.run { $0.receiveFromCoordinator([packet.message], from: coordinator, now: now) }
            case .nodeSync:
                node.interpreter.run { $0.receiveSync([SyncReply(packet.message)], now: now) }
            case .nodeSubscriber:
                if options.bug == .applyAheadOfGaps, let entries = try? EntriesMessage(frames: packet.message.parts).entries {
                    node.interpreter.carryOut([.apply(entries.filter { $0.seq > node.lastApplied + 1 })])
                }
                node.interpreter.run { $0.receivePublished([packet.message], now: now) }
            default:
                node.interpreter.run { $0.receiveFromClients([packet.message], now: now) }
            }
        case .clients:
            break
        }
    }

    /// Sends a message over the simulated network.
    func send(_ message: Message, to socket: SimulatedSocket, incarnation: Int, from: SimulatedProcess? = nil) {
        let link = from.flatMap { from in socket.process.map { SimulatedLink(from, $0) } }
        for time in network.arrivals(now: now, link: link, using: &random) {
            schedule.schedule(.deliver(Packet(to: socket, incarnation: incarnation, from: from, message: message)), at: time)
        }
    }

    /// A coordinator's reply on its submit socket, to the node its ROUTER identity names.
    private func replyToNode(_ message: Message, from coordinator: SimulatedCoordinator) {
        guard let (peer, body) = RouterEnvelope.split(message), let (node, incarnation) = SimulatedNode.parse(identity: peer.identity) else { return }
        send(Message(parts: body), to: .nodeSubmit(node, coordinator: coordinator.index), incarnation: incarnation, from: .coordinator(coordinator.index))
    }

    /// A coordinator's answer on its sync socket: to a node, or to a standby coordinator.
    func sendSyncAnswer(_ frames: [[UInt8]], to peer: RouterEnvelope, from coordinator: SimulatedCoordinator) {
        guard let (index, incarnation) = SimulatedNode.parse(identity: peer.identity) else { return }
        let socket: SimulatedSocket = peer.identity.first == UInt8(ascii: "c") ? .coordinatorFetch(index) : .nodeSync(index)
        send(Message(parts: frames), to: socket, incarnation: incarnation, from: .coordinator(coordinator.index))
    }
}
