/// Which coordinator a node submits to and repairs from, among replicated ones: the leader, as far
/// as the node knows. A state machine without I/O.
///
/// The node's subscriber listens to every coordinator (only the leader publishes); it submits to
/// and repairs from one at a time. That one is changed when it answers NOT_LEADER naming another,
/// or when it seems gone: a SUBMIT unanswered for ``timeout`` makes the node probe it with a HELLO
/// (a live leader answers that at once, even while its commits wait), and a HELLO unanswered for
/// ``timeout`` makes it ask the next in the list, which names the leader if it is not it. A
/// heartbeat in a new term (only a leader publishes one) makes the node greet every coordinator at
/// once: the new leader answers WELCOME, on its own socket, and becomes ``current`` without
/// waiting for the old one to time out. With one coordinator nothing ever changes.
struct CoordinatorChoice {
    let coordinators: [CoordinatorEndpoints]
    /// How long a HELLO may go unanswered before the next coordinator is asked (µs).
    let timeout: UInt64
    private(set) var current: CoordinatorEndpoints
    /// What the node waits to hear from ``current``, since when.
    private var waiting: Waiting = .nothing

    private enum Waiting: Equatable {
        case nothing
        /// An answer to a SUBMIT.
        case answer(since: UInt64)
        /// A WELCOME, to a HELLO.
        case welcome(since: UInt64)
    }

    /// What the node does about a coordinator that does not answer.
    enum Decision: Equatable {
        /// Say HELLO to it: alive, it answers at once.
        case probe
        /// Submit to this one instead.
        case switchTo(CoordinatorEndpoints)
    }

    init(coordinator: CoordinatorEndpoints, others: [CoordinatorEndpoints], timeout: Duration) {
        var all = [coordinator]
        for other in others where !all.contains(other) { all.append(other) }
        coordinators = all
        current = coordinator
        self.timeout = UInt64(timeout.microseconds)
    }

    var isReplicated: Bool { coordinators.count > 1 }

    /// The position of ``current`` in ``coordinators``: which of the node's submit and sync
    /// sockets (one per coordinator) to send on.
    var currentIndex: Int { coordinators.firstIndex(of: current) ?? 0 }

    /// A SUBMIT went out.
    mutating func submitted(now: UInt64) {
        if waiting == .nothing { waiting = .answer(since: now) }
    }

    /// A HELLO went out.
    mutating func greeted(now: UInt64) {
        if case .welcome = waiting { return }
        waiting = .welcome(since: now)
    }

    /// The coordinator answered: a WELCOME or an ACK on the submit socket, or an entry of one of
    /// the node's submissions.
    mutating func answered() {
        waiting = .nothing
    }

    /// A WELCOME from the coordinator at `index` (in ``coordinators``): only a leader welcomes, so
    /// the node follows it. Returns it if it is not ``current`` already.
    mutating func welcomed(by index: Int) -> CoordinatorEndpoints? {
        waiting = .nothing
        guard coordinators.indices.contains(index), index != currentIndex else { return nil }
        current = coordinators[index]
        return current
    }

    /// NOT_LEADER from the coordinator at `index`: returns the leader it names, if that is another
    /// coordinator, to switch to.
    mutating func redirected(_ message: NotLeaderMessage, by index: Int, now: UInt64) -> CoordinatorEndpoints? {
        if index == currentIndex { waiting = .nothing }
        // Only a coordinator the node was configured with: it has sockets for those.
        guard !message.id.isEmpty, message.endpoints != current, coordinators.contains(message.endpoints) else { return nil }
        current = message.endpoints
        return current
    }

    /// What to do about a coordinator silent for ``timeout``, if anything.
    mutating func tick(now: UInt64) -> Decision? {
        guard isReplicated else { return nil }
        switch waiting {
        case .nothing:
            return nil
        case .answer(let since):
            guard now - min(now, since) >= timeout else { return nil }
            waiting = .nothing
            return .probe
        case .welcome(let since):
            guard now - min(now, since) >= timeout else { return nil }
            current = coordinators[(currentIndex + 1) % coordinators.count]
            waiting = .nothing
            return .switchTo(current)
        }
    }
}
