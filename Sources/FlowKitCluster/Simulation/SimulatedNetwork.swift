import ZeroMQ

/// Which socket of which process a simulated message arrives at. A process that restarted has a
/// new incarnation; what was sent to the old one is lost with it, as with a real socket.
enum SimulatedSocket: Hashable, CustomStringConvertible {
    /// The coordinator's submit socket (ROUTER); the message begins with the sender's identity.
    case coordinatorSubmit
    /// The coordinator's sync socket (ROUTER).
    case coordinatorSync
    /// A node's DEALER on the coordinator's submit socket: acks, welcomes, errors.
    case nodeSubmit(Int)
    /// A node's DEALER on the coordinator's sync socket: ranges, snapshot chunks, errors.
    case nodeSync(Int)
    /// A node's SUB on the coordinator's publish socket.
    case nodeSubscriber(Int)
    /// A node's client socket (ROUTER).
    case nodeClient(Int)
    /// The simulated clients' DEALER.
    case clients

    var description: String {
        switch self {
        case .coordinatorSubmit: "c.submit"
        case .coordinatorSync: "c.sync"
        case .nodeSubmit(let node): "n\(node).submit"
        case .nodeSync(let node): "n\(node).sync"
        case .nodeSubscriber(let node): "n\(node).sub"
        case .nodeClient(let node): "n\(node).client"
        case .clients: "clients"
        }
    }

    /// The node at either end of the link this socket is on, if any.
    var node: Int? {
        switch self {
        case .nodeSubmit(let node), .nodeSync(let node), .nodeSubscriber(let node), .nodeClient(let node): node
        case .coordinatorSubmit, .coordinatorSync, .clients: nil
        }
    }
}

/// A message on its way.
struct Packet {
    var to: SimulatedSocket
    /// The incarnation of the receiving process it was sent to.
    var incarnation: Int
    /// The node that sent it, for a message to the coordinator.
    var from: Int?
    var message: Message
}

/// The network between the simulated processes: every link delays each message by its own draw
/// (so messages overtake each other), and may drop or duplicate it; a partition cuts every link
/// between the coordinator and one node, both ways, until it heals.
struct SimulatedNetwork {
    struct Conditions: CustomStringConvertible {
        /// The chance that a message is lost.
        var drop: Double
        /// The chance that a message arrives twice.
        var duplicate: Double
        /// The shortest and longest delay of a message, in microseconds.
        var delay: ClosedRange<UInt64>

        var description: String {
            "drop \(drop), duplicate \(duplicate), delay \(delay.lowerBound)…\(delay.upperBound) µs"
        }
    }

    var conditions: Conditions
    /// Nodes cut off from the coordinator.
    private(set) var partitioned: Set<Int> = []
    private(set) var sent = 0
    private(set) var dropped = 0
    private(set) var duplicated = 0

    init(conditions: Conditions) {
        self.conditions = conditions
    }

    mutating func partition(_ node: Int) { partitioned.insert(node) }
    mutating func heal(_ node: Int) { partitioned.remove(node) }
    mutating func healAll() { partitioned.removeAll() }

    /// When each copy of a message sent now arrives: none when it is lost, two when duplicated.
    ///
    /// - Parameter link: The node at the other end, for a message between the coordinator and a
    ///   node; `nil` for the clients' own links, which are never cut.
    mutating func arrivals(now: UInt64, link: Int?, using random: inout SeededRandom) -> [UInt64] {
        sent += 1
        if let link, partitioned.contains(link) {
            dropped += 1
            return []
        }
        if link != nil, conditions.drop > 0, Double.random(in: 0..<1, using: &random) < conditions.drop {
            dropped += 1
            return []
        }
        var times = [now + UInt64.random(in: conditions.delay, using: &random)]
        if link != nil, conditions.duplicate > 0, Double.random(in: 0..<1, using: &random) < conditions.duplicate {
            duplicated += 1
            times.append(now + UInt64.random(in: conditions.delay, using: &random))
        }
        return times
    }
}
