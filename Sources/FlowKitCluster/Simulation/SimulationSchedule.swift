import HeapModule

/// What happens at a moment of simulated time.
enum SimulationEvent {
    case deliver(Packet)
    /// A node's timer (retries, repairs, timeouts), for the incarnation that set it.
    case nodeTick(node: Int, incarnation: Int)
    case coordinatorHeartbeat(incarnation: Int)
    case coordinatorStatus(incarnation: Int)
    /// The simulated disk finished a group commit the coordinator incarnation asked for.
    case commitDone(incarnation: Int, PendingCommit, succeeded: Bool)
    /// A simulated client emits an event.
    case clientEmit
    case fault(SimulatedFault)
}

/// A process of the simulated cluster.
enum SimulatedProcess: Hashable, CustomStringConvertible {
    case coordinator
    case node(Int)

    var description: String {
        switch self {
        case .coordinator: "the coordinator"
        case .node(let index): "node \(index)"
        }
    }
}

extension SimulationEvent {
    /// The process that handles the event, if one does.
    var process: SimulatedProcess? {
        switch self {
        case .deliver(let packet):
            switch packet.to {
            case .coordinatorSubmit, .coordinatorSync: .coordinator
            case .nodeSubmit(let node), .nodeSync(let node), .nodeSubscriber(let node), .nodeClient(let node): .node(node)
            case .clients: nil
            }
        case .nodeTick(let node, _): .node(node)
        case .coordinatorHeartbeat, .coordinatorStatus, .commitDone: .coordinator
        case .clientEmit, .fault: nil
        }
    }

    /// A timer that sets itself again: a paused process owes one of each, not one per period.
    var timer: String? {
        switch self {
        case .nodeTick: "tick"
        case .coordinatorHeartbeat: "heartbeat"
        case .coordinatorStatus: "status"
        case .deliver, .commitDone, .clientEmit, .fault: nil
        }
    }
}

/// A fault the simulation injects.
enum SimulatedFault: CustomStringConvertible {
    case crashCoordinator
    case restartCoordinator
    case crashNode(Int)
    case restartNode(Int)
    case partition(Int)
    case heal(Int)
    /// The disk refuses writes until ``diskRecovers``.
    case diskFull
    case diskRecovers
    /// The process stops running (a SIGSTOP, a long pause): what arrives for it waits, and its
    /// timers do not fire, until it resumes.
    case pause(SimulatedProcess)
    case resume(SimulatedProcess)

    var description: String {
        switch self {
        case .crashCoordinator: "crash the coordinator"
        case .restartCoordinator: "restart the coordinator"
        case .crashNode(let node): "crash node \(node)"
        case .restartNode(let node): "restart node \(node)"
        case .partition(let node): "partition node \(node) from the coordinator"
        case .heal(let node): "heal node \(node)'s partition"
        case .diskFull: "fill the coordinator's disk"
        case .diskRecovers: "free the coordinator's disk"
        case .pause(let process): "pause \(process)"
        case .resume(let process): "resume \(process)"
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
