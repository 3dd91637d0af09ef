import HeapModule

/// What happens at a moment of simulated time.
enum SimulationEvent {
    case deliver(Packet)
    /// A node's timer (retries, repairs, timeouts), for the incarnation that set it.
    case nodeTick(node: Int, incarnation: Int)
    /// A node's work that finishes later (``SimulatedNodeIO``), for the incarnation that asked.
    case nodeWork(Int, incarnation: Int, SimulatedNodeWork)
    case coordinatorHeartbeat(Int, incarnation: Int)
    case coordinatorStatus(Int, incarnation: Int)
    /// A replicated coordinator's timers: its election's (renewals, stepping down) and its
    /// sync socket's (FETCHes held, or unanswered).
    case electionTick(Int, incarnation: Int)
    case syncTick(Int, incarnation: Int)
    /// A coordinator's disk finished a group commit the coordinator incarnation asked for
    /// (``SimulatedCoordinator/writes``).
    case commitDone(Int, incarnation: Int, write: UInt64, PendingCommit)
    /// A coordinator's work off its ordering path (``SimulatedCoordinatorIO``).
    case coordinatorWork(Int, incarnation: Int, SimulatedCoordinatorWork)
    /// A standby's disk finished writing what it fetched from the leader.
    case copyWritten(Int, incarnation: Int, write: UInt64, through: UInt64, lastEpoch: UInt32)
    /// A request reaches the election service.
    case electionRequest(SimulatedEtcd.Request, id: UInt64, from: Int, incarnation: Int)
    /// The election service's answer, or a change it watched, reaches a coordinator.
    case electionAnswer(SimulatedEtcd.Answer, id: UInt64, to: Int, incarnation: Int)
    case electionView(ElectionView, revision: Int64, to: Int, incarnation: Int)
    /// A request to the election service went unanswered for the client's timeout.
    case electionTimeout(id: UInt64, coordinator: Int, incarnation: Int)
    /// A lease may have run out.
    case leaseExpiry
    /// A simulated client emits an event.
    case clientEmit
    case fault(SimulatedFault)
}

/// A process of the simulated cluster.
enum SimulatedProcess: Hashable, CustomStringConvertible {
    case coordinator(Int)
    case node(Int)
    /// The election service (etcd), for replicated coordinators: never paused or crashed.
    case etcd

    var description: String {
        switch self {
        case .coordinator(let index): "c\(index)"
        case .node(let index): "node \(index)"
        case .etcd: "etcd"
        }
    }
}

extension SimulationEvent {
    /// The process that handles the event, if one does.
    var process: SimulatedProcess? {
        switch self {
        case .deliver(let packet): packet.to.process
        case .nodeTick(let node, _), .nodeWork(let node, _, _): .node(node)
        case .coordinatorHeartbeat(let index, _), .coordinatorStatus(let index, _), .electionTick(let index, _), .syncTick(let index, _),
            .commitDone(let index, _, _, _), .coordinatorWork(let index, _, _), .copyWritten(let index, _, _, _, _), .electionAnswer(_, _, let index, _),
            .electionView(_, _, let index, _), .electionTimeout(_, let index, _):
            .coordinator(index)
        case .electionRequest, .leaseExpiry: .etcd
        case .clientEmit, .fault: nil
        }
    }

    /// A timer that sets itself again: a paused process owes one of each, not one per period (a
    /// timer of an earlier run of the process is another timer).
    var timer: String? {
        switch self {
        case .nodeTick(_, let incarnation): "tick@\(incarnation)"
        case .coordinatorHeartbeat(_, let incarnation): "heartbeat@\(incarnation)"
        case .coordinatorStatus(_, let incarnation): "status@\(incarnation)"
        case .electionTick(_, let incarnation): "election@\(incarnation)"
        case .syncTick(_, let incarnation): "sync@\(incarnation)"
        case .deliver, .nodeWork, .commitDone, .coordinatorWork, .copyWritten, .electionRequest, .electionAnswer, .electionView, .electionTimeout, .leaseExpiry,
            .clientEmit, .fault:
            nil
        }
    }
}

/// A fault the simulation injects.
enum SimulatedFault: CustomStringConvertible {
    case crashCoordinator(Int)
    case restartCoordinator(Int)
    /// Every coordinator crashes at once (a power cut): each loses what its disk had not synced.
    case powerLoss
    /// Every coordinator that is down starts again.
    case powerRestored
    case crashNode(Int)
    case restartNode(Int)
    /// Every link between the process and these is cut, both ways, until ``mend(_:from:)``.
    case cut(SimulatedProcess, from: [SimulatedProcess])
    case mend(SimulatedProcess, from: [SimulatedProcess])
    /// A coordinator's disk refuses writes until ``diskRecovers(_:)``: each write is taken and its
    /// sync refused (replicated, after the leader sent the group to its standbys).
    case diskFull(Int)
    case diskRecovers(Int)
    /// The process stops running (a SIGSTOP, a long pause): what arrives for it waits, and its
    /// timers do not fire, until it resumes.
    case pause(SimulatedProcess)
    case resume(SimulatedProcess)
    /// A fault among replicated coordinators, resolved when it strikes
    /// (``ClusterSimulation/resolve(_:coordinator:strikesLeader:node:)``): its coordinator (or
    /// whoever leads then), its node, and how long until it is undone.
    case strike(ReplicatedFault, coordinator: Int, strikesLeader: Bool, node: Int, lasts: UInt64)
    /// A stranger's connection says HELLO as a node of its own, then sends every coordinator a
    /// SUBMIT in this node's name (its id and session), its ids among the node's own.
    case forge(node: Int)
    /// A coordinator still at build 1 moves to build 2 of the flow (``SimulationOptions/upgrade``):
    /// a standby while one is left, then the leader.
    case upgradeCoordinator
    /// The node moves to build 2: restarted now if it runs, at its next start if it is down.
    case upgradeNode(Int)

    var description: String {
        switch self {
        case .crashCoordinator(let index): "crash c\(index)"
        case .restartCoordinator(let index): "restart c\(index)"
        case .powerLoss: "power loss: every coordinator crashes"
        case .powerRestored: "power back: every coordinator restarts"
        case .crashNode(let node): "crash node \(node)"
        case .restartNode(let node): "restart node \(node)"
        case .cut(let process, let others): "cut \(process) from \(others.map(\.description).joined(separator: ", "))"
        case .mend(let process, let others): "mend \(process)'s links to \(others.map(\.description).joined(separator: ", "))"
        case .diskFull(let index): "fill c\(index)'s disk"
        case .diskRecovers(let index): "free c\(index)'s disk"
        case .pause(let process): "pause \(process)"
        case .resume(let process): "resume \(process)"
        case .strike(let kind, let coordinator, let strikesLeader, _, _): "\(kind) (\(strikesLeader ? "the leader" : "c\(coordinator)"))"
        case .forge(let node): "a stranger submits in node \(node)'s name"
        case .upgradeCoordinator: "upgrade a coordinator to build 2"
        case .upgradeNode(let node): "upgrade node \(node) to build 2"
        }
    }
}

/// The simulation's future: events by time, and in the order they were scheduled at one time.
struct SimulationSchedule {
    private struct Scheduled: Comparable {
        var time: UInt64
        var order: UInt64
        var event: SimulationEvent

        static func < (lhs: Scheduled, rhs: Scheduled) -> Bool {
            (lhs.time, lhs.order) < (rhs.time, rhs.order)
        }

        static func == (lhs: Scheduled, rhs: Scheduled) -> Bool {
            (lhs.time, lhs.order) == (rhs.time, rhs.order)
        }
    }

    private var heap = Heap<Scheduled>()
    private var order: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }

    mutating func schedule(_ event: SimulationEvent, at time: UInt64) {
        order += 1
        heap.insert(Scheduled(time: time, order: order, event: event))
    }

    /// The next event and its time.
    mutating func next() -> (time: UInt64, event: SimulationEvent)? {
        heap.popMin().map { ($0.time, $0.event) }
    }
}
