import ZeroMQ

/// A simulated node's I/O for the ``NodeInterpreter`` the processes run: the simulated network to
/// its coordinators and clients, and its hashing and wake-ups as events on the simulated clock.
/// What it sees applied is checked as it happens: every seq once, in order.
final class SimulatedNodeIO: NodeIO {
    unowned let simulation: ClusterSimulation
    unowned let node: SimulatedNode

    init(simulation: ClusterSimulation, node: SimulatedNode) {
        self.simulation = simulation
        self.node = node
    }

    var now: UInt64 { simulation.now }
    var clientEndpoint: String { "sim://node-\(node.index)" }

    func submit(_ frames: [[UInt8]], to index: Int) {
        send(frames, to: .coordinatorSubmit(index))
    }

    func report(_ message: NodeReportMessage, to index: Int, speaking version: UInt8) {
        // Checked against the log replayed by the build every node runs at the end (the states of
        // another build have another shape).
        if message.report.digestSeq > 0, simulation.builds.nodes[node.index] == (simulation.options.upgrade ? 2 : 1) {
            simulation.history.noteCurrentDigest(message.report.digest, at: message.report.digestSeq, from: node.index)
        }
        send(WireDialect.answer(message.frames, in: version), to: .coordinatorSubmit(index))
    }

    func requestSync(_ frames: [[UInt8]], from index: Int) {
        send(frames, to: .coordinatorSync(index))
    }

    private func send(_ frames: [[UInt8]], to socket: SimulatedSocket) {
        guard case .coordinator(let index)? = socket.process else { return }
        simulation.send(
            Message(parts: [node.identity] + frames), to: socket, incarnation: simulation.coordinatorIncarnations[index], from: .node(node.index)
        )
    }

    func reply(_ reply: ClientReply, to peer: RouterEnvelope) {
        simulation.history.note(reply, from: node.index, at: now)
    }

    func applied(_ entries: [Entry], progressSent: Bool) {
        let machine = node.machine
        for entry in entries {
            if entry.seq != node.lastApplied + 1 {
                simulation.history.violations.append("node \(node.index) (run \(node.incarnation)) applied seq \(entry.seq) after \(node.lastApplied)")
            }
            node.lastApplied = entry.seq
            if machine.isOwn(entry) { simulation.history.noteEffects(of: entry, ranOn: node.index, session: machine.session) }
        }
    }

    func restored(seq: UInt64, instances: Int, error: (any Error)?) {
        guard error == nil else { return }
        node.lastApplied = seq
        simulation.trace.note(at: now, "n\(node.index): restored a snapshot at \(seq)")
    }

    /// Hashed now, where the simulation runs, and handed back a millisecond later, as the
    /// background thread would; the CPU it took is not charged (the budget stays deterministic).
    func hash(_ jobs: [ReplicaSet.DigestJob]) {
        let results = ReplicaSet.hash(jobs).results
        simulation.schedule.schedule(.nodeWork(node.index, incarnation: node.incarnation, .hashed(results)), at: now + 1_000)
    }

    func wake(at time: UInt64) {
        simulation.schedule.schedule(.nodeWork(node.index, incarnation: node.incarnation, .wake), at: time)
    }

    func reported() {}
}

/// What a simulated node's ``SimulatedNodeIO`` hands back later, as an event of its own.
enum SimulatedNodeWork {
    /// Digests hashed (``NodeIO/hash(_:)``).
    case hashed([ReplicaSet.DigestResult])
    /// A wake-up asked for (``NodeIO/wake(at:)``).
    case wake
}
