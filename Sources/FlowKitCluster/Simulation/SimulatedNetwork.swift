import ZeroMQ

/// Which socket of which process a simulated message arrives at. A process that restarted has a
/// new incarnation; what was sent to the old one is lost with it, as with a real socket.
enum SimulatedSocket: Hashable, CustomStringConvertible {
    /// A coordinator's submit socket (ROUTER); the message begins with the sender's identity.
    case coordinatorSubmit(Int)
    /// A coordinator's sync socket (ROUTER): ranges, snapshots, and its standbys' FETCHes.
    case coordinatorSync(Int)
    /// A standby coordinator's DEALER on the leader's sync socket: FETCHED answers.
    case coordinatorFetch(Int)
    /// A node's DEALER on a coordinator's submit socket: acks, welcomes, errors.
    case nodeSubmit(Int, coordinator: Int)
    /// A node's DEALER on the coordinator's sync socket: ranges, snapshot chunks, errors.
    case nodeSync(Int)
    /// A node's SUB on the coordinators' publish sockets.
    case nodeSubscriber(Int)
    /// A node's client socket (ROUTER).
    case nodeClient(Int)
    /// The simulated clients' DEALER.
    case clients

    var description: String {
        switch self {
        case .coordinatorSubmit(let index): "c\(index).submit"
        case .coordinatorSync(let index): "c\(index).sync"
        case .coordinatorFetch(let index): "c\(index).fetch"
        case .nodeSubmit(let node, let coordinator): "n\(node).submit(c\(coordinator))"
        case .nodeSync(let node): "n\(node).sync"
        case .nodeSubscriber(let node): "n\(node).sub"
        case .nodeClient(let node): "n\(node).client"
        case .clients: "clients"
        }
    }

    /// The process the socket belongs to (`nil`: the clients, never cut off or paused).
    var process: SimulatedProcess? {
        switch self {
        case .coordinatorSubmit(let index), .coordinatorSync(let index), .coordinatorFetch(let index): .coordinator(index)
        case .nodeSubmit(let node, _), .nodeSync(let node), .nodeSubscriber(let node), .nodeClient(let node): .node(node)
        case .clients: nil
        }
    }
}

/// A message on its way.
struct Packet {
    var to: SimulatedSocket
    /// The incarnation of the receiving process it was sent to.
    var incarnation: Int
    /// The process that sent it (`nil`: a client).
    var from: SimulatedProcess?
    var message: Message
}

/// A link between two processes, whichever way a message crosses it.
struct SimulatedLink: Hashable, CustomStringConvertible {
    let ends: Set<SimulatedProcess>

    init(_ one: SimulatedProcess, _ other: SimulatedProcess) {
        ends = [one, other]
    }

    var description: String { ends.map(\.description).sorted().joined(separator: " – ") }
}

/// The network between the simulated processes: every link delays each message by its own draw
/// (so messages overtake each other), and may drop or duplicate it; a cut link loses everything
/// both ways until it is mended. The election service's links (TCP requests and watches) are
/// never lossy, only cut.
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
    /// Links cut, each counted once per fault that cuts it: overlapping faults heal one by one.
    private(set) var cuts: [SimulatedLink: Int] = [:]
    private(set) var sent = 0
    private(set) var dropped = 0
    private(set) var duplicated = 0

    init(conditions: Conditions) {
        self.conditions = conditions
    }

    func isCut(_ link: SimulatedLink) -> Bool { cuts[link] != nil }

    mutating func cut(_ process: SimulatedProcess, from others: [SimulatedProcess]) {
        for other in others where other != process { cuts[SimulatedLink(process, other), default: 0] += 1 }
    }

    mutating func mend(_ process: SimulatedProcess, from others: [SimulatedProcess]) {
        for other in others where other != process {
            let link = SimulatedLink(process, other)
            guard let count = cuts[link] else { continue }
            cuts[link] = count > 1 ? count - 1 : nil
        }
    }

    mutating func mendAll() { cuts.removeAll() }

    /// When each copy of a message sent now arrives: none when it is lost, two when duplicated.
    ///
    /// - Parameter link: The link it crosses; `nil` for the clients' own links, never cut.
    /// - Parameter lossy: Whether it may be dropped or duplicated (ZeroMQ's queues and reconnects);
    ///   the election service's requests either arrive once or fail.
    mutating func arrivals(now: UInt64, link: SimulatedLink?, lossy: Bool = true, using random: inout SeededRandom) -> [UInt64] {
        sent += 1
        if let link, isCut(link) {
            dropped += 1
            return []
        }
        let lossy = lossy && link != nil
        if lossy, conditions.drop > 0, Double.random(in: 0..<1, using: &random) < conditions.drop {
            dropped += 1
            return []
        }
        var times = [now + UInt64.random(in: conditions.delay, using: &random)]
        if lossy, conditions.duplicate > 0, Double.random(in: 0..<1, using: &random) < conditions.duplicate {
            duplicated += 1
            times.append(now + UInt64.random(in: conditions.delay, using: &random))
        }
        return times
    }
}
