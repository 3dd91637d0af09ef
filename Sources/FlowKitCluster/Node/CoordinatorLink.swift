/// A node's view of its coordinator: the coordinator's term (its epoch), whether it is alive (it
/// sent a heartbeat, a welcome or an ack within ``timeout``), and what the node must do when either
/// changes.
///
/// A state machine without I/O, in the manner of ``LogFollower``: the node feeds it what arrives
/// from the coordinator and the clock, and carries out the actions it returns, in order.
struct CoordinatorLink {
    enum Action: Equatable {
        /// The coordinator began a term after `previous` (0: the first this node saw).
        case newTerm(UInt32, previous: UInt32)
        /// The new term's log ends at `head`, before what this node applied: entries it holds were
        /// lost with the coordinator. Drop the state and rejoin through a snapshot.
        case rejoin(head: UInt64)
        /// Say HELLO and resend every unacknowledged submission: the coordinator is back, or new.
        case reconnect
        /// Nothing from the coordinator for four timeouts: say HELLO again and warn the operator.
        case helloAgain
        /// The coordinator's head is at least this.
        case noteHead(UInt64)
        /// An ACK says the coordinator's head is at least this: its entries are being published
        /// at the same moment, on the other connection.
        case noteAnnouncedHead(UInt64)
        /// A first welcome into a cluster with a log: join through a snapshot.
        case joinThroughSnapshot
    }

    /// How long the coordinator may stay silent and still count as connected (µs).
    let timeout: UInt64
    /// Whether a node that starts empty joins through the coordinator's snapshot.
    let joinsThroughSnapshot: Bool
    /// Replicated coordinators: what a node applied was committed, so every later leader holds
    /// it; a new leader's head (its commit point) may start below it and catch up, which is no
    /// loss.
    let headMayLag: Bool

    private(set) var epoch: UInt32 = 0
    /// The epoch of the last entry the node applied; 0 when unknown (none yet, or a snapshot).
    private var appliedEpoch: UInt32 = 0
    private var lastHeard: UInt64 = 0
    private var welcomed = false

    init(timeout: Duration, joinsThroughSnapshot: Bool, headMayLag: Bool = false) {
        self.timeout = UInt64(timeout.microseconds)
        self.joinsThroughSnapshot = joinsThroughSnapshot
        self.headMayLag = headMayLag
    }

    /// The node applied entries up to one ordered in `epoch`.
    mutating func applied(epoch: UInt32) {
        appliedEpoch = epoch
    }

    /// Whether a WELCOME has answered this node's HELLO.
    var hasBeenWelcomed: Bool { welcomed }

    func isConnected(now: UInt64) -> Bool {
        lastHeard != 0 && now - min(now, lastHeard) < timeout
    }

    // MARK: Inputs

    /// A heartbeat: the coordinator's term and head.
    mutating func heartbeat(epoch: UInt32, head: UInt64, applied: UInt64, now: UInt64) -> [Action] {
        let wasConnected = isConnected(now: now)
        lastHeard = now
        var actions = noteTerm(epoch, head: head, applied: applied)
        if actions.isEmpty, !wasConnected { actions.append(.reconnect) }
        return actions + [.noteHead(head)]
    }

    /// The WELCOME that answers this node's HELLO.
    mutating func welcome(epoch: UInt32, head: UInt64, applied: UInt64, isJoining: Bool, now: UInt64) -> [Action] {
        var actions = noteTerm(epoch, head: head, applied: applied)
        lastHeard = now
        if !welcomed, joinsThroughSnapshot, applied == 0, head > 0, !isJoining {
            actions.append(.joinThroughSnapshot)
        } else {
            actions.append(.noteHead(head))
        }
        welcomed = true
        return actions
    }

    /// An ACK. Its epoch is the one that ordered its entries: the coordinator's term, except in an
    /// ACK of duplicates only, which may name the older term that ordered them; only the former
    /// tells of a new term. A new term is handled before the ACK's answers, so an ack from a
    /// coordinator that lost what this node applied is answered only once the node has rejoined.
    mutating func ack(epoch: UInt32, head: UInt64, duplicatesOnly: Bool, applied: UInt64) -> [Action] {
        (duplicatesOnly ? [] : noteTerm(epoch, head: head, applied: applied)) + [.noteAnnouncedHead(head)]
    }

    /// The node dropped and re-made its connections.
    func reconnected() -> [Action] { [.reconnect] }

    /// Every tick: a coordinator silent for four timeouts gets another HELLO (it may have restarted
    /// without this node noticing), and then again every three timeouts.
    mutating func tick(now: UInt64) -> [Action] {
        guard !isConnected(now: now), now - min(now, lastHeard) > timeout * 4 else { return [] }
        lastHeard = now - timeout
        return [.helloAgain]
    }

    /// Notes the coordinator's term from any message that carries it.
    ///
    /// - Returns: Nothing in the same term; in a new one, what to do about it.
    private mutating func noteTerm(_ newEpoch: UInt32, head: UInt64, applied: UInt64) -> [Action] {
        guard newEpoch != epoch else { return [] }
        let previous = epoch
        epoch = newEpoch
        var actions: [Action] = [.newTerm(newEpoch, previous: previous)]
        // A head below what the node applied means the new term's log lost entries, unless the
        // node applied an entry of the new term itself: then the message is older than that entry
        // (an ACK or a heartbeat overtaken by ENTRIES on another socket), and nothing was lost.
        if head < applied, appliedEpoch != newEpoch, !headMayLag { actions.append(.rejoin(head: head)) }
        actions.append(.reconnect)
        return actions
    }
}
