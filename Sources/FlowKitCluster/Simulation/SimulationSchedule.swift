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
