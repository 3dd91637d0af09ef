import Foundation
import Logging
import ZeroMQ

extension ClusterSimulation {
    // MARK: Processes

    func startCoordinator() async throws {
        coordinatorIncarnation += 1
        let started = try await SimulatedCoordinator.start(
            incarnation: coordinatorIncarnation, disk: disk, configuration: coordinatorConfiguration, logger: logger, now: now,
            bug: options.bug
        )
        coordinator = started
        trace.note(at: now, "c: started, epoch \(started.machine.epoch), head \(started.machine.durableHead)")
        schedule.schedule(.coordinatorHeartbeat(incarnation: coordinatorIncarnation), at: now + 100_000)
        schedule.schedule(.coordinatorStatus(incarnation: coordinatorIncarnation), at: now + 1_000_000)
    }

    func startNode(_ index: Int) {
        nodeIncarnations[index] += 1
        var configuration = NodeConfiguration(
            id: UInt32(index + 1), coordinator: CoordinatorEndpoints(submit: "sim://submit", publish: "sim://publish", sync: "sim://sync"),
            name: "node-\(index)"
        )
        configuration.joinThroughSnapshot = random.next() % 2 == 0
        let node = SimulatedNode(
            index: index, incarnation: nodeIncarnations[index], session: random.next() | 1, configuration: configuration,
            logger: nodeLogger(index), now: now
        )
        nodes[index] = node
        trace.note(at: now, "n\(index): started, run \(node.incarnation)")
        perform(node.machine.start(now: now), on: node)
        schedule.schedule(.nodeTick(node: index, incarnation: node.incarnation), at: now + UInt64.random(in: 1...50_000, using: &random))
    }

    /// A client's request to a random node: an event with a token no other event carries (one in
    /// four starts an effect), or now and then a cancel of an earlier effect of the same instance.
    func emit() {
        let index = Int.random(in: 0..<options.nodes, using: &random)
        let request = nextRequest
        nextRequest += 1
        let address = "sim/k\(random.next() % 8)"
        let wait: WaitMode = random.next() % 4 == 0 ? .applied : .ordered
        let frames: [[UInt8]]
        switch random.next() % 8 {
        case 0 where !(history.work[address] ?? []).isEmpty:
            let token = history.work[address]!.randomElement(using: &random)!
            frames = ClientRequest.cancel(request: request, wait: wait, address: address, id: token).frames
        case let choice:
            let token = "t\(request)"
            let event: SimulationFlow.Event = choice < 3 ? .work(token) : .append(token)
            history.noteEmit(request: request, token: token, node: index, address: address, startsWork: choice < 3)
            let payload = (try? JSONEncoder().encode(event)).map { [UInt8]($0) } ?? []
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

    // MARK: Faults

    /// Faults at random moments of the active period, each undone a while later.
    func planFaults(until end: UInt64) {
        for _ in 0..<options.faults {
            let at = UInt64.random(in: 200_000...max(200_001, end), using: &random)
            let lasts = UInt64.random(in: 100_000...3_000_000, using: &random)
            let node = Int.random(in: 0..<options.nodes, using: &random)
            let (fault, undo): (SimulatedFault, SimulatedFault) = switch random.next() % 6 {
            case 0: (.crashCoordinator, .restartCoordinator)
            case 1: (.crashNode(node), .restartNode(node))
            case 2: (.partition(node), .heal(node))
            case 3: (.diskFull, .diskRecovers)
            case 4: (.pause(.node(node)), .resume(.node(node)))
            default: (.pause(.coordinator), .resume(.coordinator))
            }
            schedule.schedule(.fault(fault), at: at)
            schedule.schedule(.fault(undo), at: min(at + lasts, end))
        }
    }

    func inject(_ fault: SimulatedFault) async throws {
        trace.note(at: now, "FAULT: \(fault)")
        history.faults.append("\(Double(now) / 1_000_000) s: \(fault)")
        switch fault {
        case .crashCoordinator:
            coordinator = nil
            coordinatorIncarnation += 1  // what was in flight to it is lost
            paused[.coordinator] = nil
        case .restartCoordinator:
            if coordinator == nil { try await startCoordinator() }
        case .crashNode(let index):
            nodes[index]?.replicas.shutDown()  // its effects die with it
            nodes[index] = nil
            paused[.node(index)] = nil
        case .restartNode(let index):
            if nodes[index] == nil { startNode(index) }
        case .partition(let index):
            network.partition(index)
        case .heal(let index):
            network.heal(index)
        case .diskFull:
            disk.isFull = true
        case .diskRecovers:
            disk.isFull = false
        case .pause(let process):
            if paused[process] == nil { paused[process] = [] }
        case .resume(let process):
            resume(process)
        }
    }

    /// A paused process runs again: what arrived meanwhile is handled now, in order.
    func resume(_ process: SimulatedProcess) {
        guard let held = paused.removeValue(forKey: process) else { return }
        for event in held { schedule.schedule(event, at: now) }
    }

    /// The end of the active period: every fault undone, every process running again.
    func healEverything() async throws {
        trace.note(at: now, "the active period ends: healing everything")
        network.healAll()
        disk.isFull = false
        for process in paused.keys.sorted(by: { $0.description < $1.description }) { resume(process) }
        if coordinator == nil { try await startCoordinator() }
        for index in nodes.indices where nodes[index] == nil { startNode(index) }
    }
}
