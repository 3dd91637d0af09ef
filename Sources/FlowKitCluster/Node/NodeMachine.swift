import Logging
import ZeroMQ

/// A node's behaviour as a state machine without I/O.
///
/// Its inputs are what the node's sockets read (published entries and heartbeats, the
/// coordinator's answers, sync replies, client requests), what its effects submit, and the ticks
/// of its timer, each with the time (microseconds since the Unix epoch); its outputs are
/// ``Action``s: messages to send, entries to apply, snapshots to restore, clients to answer.
/// ``NodeInterpreter`` carries them out, over ZeroMQ and the node's replicas in the process and
/// over a simulated network in the simulation. It composes the node's smaller machines: the
/// ``LogFollower``, the ``SubmissionQueue``, the ``ClientWaiters``, the ``CoordinatorLink`` and the
/// wall (``Admission``). It has no effects of its own: what it would log, count or trace it
/// observes (``Observations``), and its interpreter delivers.
struct NodeMachine {
    enum Action {
        /// Send on the submit socket: HELLO, SUBMIT.
        case submit([[UInt8]])
        /// Send on the sync socket: a range or snapshot request.
        case requestSync([[UInt8]])
        /// Send `reply` to a client.
        case reply(ClientReply, to: RouterEnvelope)
        /// Apply these entries to the replicas, in order, running the effects of the node's own
        /// (``isOwn(_:)``).
        case apply([Entry])
        /// Replace every instance with a snapshot's, taken at `seq`; then report the outcome with
        /// ``restored(_:now:)``.
        case restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance])
        /// Answer a query with the instance's state now.
        case answerQuery(request: UInt64, address: String, to: RouterEnvelope)
        /// Answer a STATUS with the node's status now.
        case answerStatus(request: UInt64, to: RouterEnvelope)
        /// A report to the coordinator is due.
        case report
        /// Submit to and repair from another of the replicated coordinators from now on
        /// (``CoordinatorChoice/current``); the HELLO that follows goes to it.
        case switchCoordinator(CoordinatorEndpoints)
        /// Send these frames (a HELLO) to every replicated coordinator: a new term began, and
        /// whichever leads it answers WELCOME.
        case greetEveryCoordinator([[UInt8]])
    }

    let configuration: NodeConfiguration
    /// This process's session: with the node id it tells the node's own entries from others'.
    let session: UInt64
    /// What it says of itself as it decides (log lines, counts, gauges, hop-trace notes), for its
    /// interpreter to take (``takeObservations()``).
    var observations = Observations()
    /// What the node says of itself in every HELLO.
    let info: NodeInfo
    // The smaller machines, each with its own rules; the extensions in NodeMachine+*.swift use
    // them too, so they are not private.
    var follower: LogFollower
    var submissions: SubmissionQueue
    /// Clients owed an answer once this node has applied far enough.
    var waiters: ClientWaiters
    /// The coordinator's term and liveness.
    var link: CoordinatorLink
    /// Which of the replicated coordinators the node submits to.
    var choice: CoordinatorChoice
    /// The rule every emit, cancel and effect submission passes: the coordinator's own.
    var admission: Admission
    var refusals: RefusalLog
    /// When the applied seq last moved, or the node was last at the head; a node behind the head
    /// that has not moved for ``NodeConfiguration/stallTimeout`` logs that it is stalled.
    var progress: (applied: UInt64, at: UInt64, logged: Bool)
    /// Whether the entry the node cannot read (``unreadable``) has been logged.
    var unreadableLogged = false
    /// Why this node must not go on running: the log holds an entry (or a snapshot a state) older
    /// than its build's steps reach, which no wait will make readable (docs/VERSIONING.md,
    /// guarantee 2). The process stops with it; nil otherwise.
    var refusal: ProtocolError?
    var lastReport: UInt64 = 0
    /// The applied seq the last report stated: a node that applied nothing since, at the head, is idle.
    var lastReportedApplied: UInt64 = 0
    /// When the node last said HELLO because the coordinator asked for one (``helloFirst``).
    var lastHelloOnRequest: UInt64 = 0
    /// The wire protocol each coordinator (by index) speaks, when older than this process's.
    var coordinatorProtocols = CoordinatorProtocols()
    /// Until it applied this seq the node's instances are at different seqs (restored from a local
    /// snapshot copied over several turns: ``ReplicaSet/StateCopy``), so it reports no digests.
    var consistentFrom: UInt64 = 0
    /// What the follower asked for after a snapshot, held until the snapshot is restored.
    private var afterRestore: [LogFollower.Action] = []

    /// Forgets what waited for a restore: the node starts over from a new snapshot.
    mutating func dropHeldForRestore() { afterRestore = [] }

    init(configuration: NodeConfiguration, registry: FlowRegistry, session: UInt64, info: NodeInfo, now: UInt64) {
        self.configuration = configuration
        self.session = session
        self.info = info
        self.follower = Self.follower(applied: 0, configuration: configuration, registry: registry)
        self.submissions = SubmissionQueue(capacity: configuration.maxPendingSubmissions)
        self.waiters = ClientWaiters(queryTimeout: configuration.queryTimeout)
        self.link = CoordinatorLink(
            timeout: configuration.coordinatorTimeout, joinsThroughSnapshot: configuration.joinThroughSnapshot,
            headMayLag: !configuration.otherCoordinators.isEmpty
        )
        // Half the link's timeout: an answer normally comes in milliseconds, and a node whose
        // leader died should find the next one before its clients give up.
        self.choice = CoordinatorChoice(coordinator: configuration.coordinator, others: configuration.otherCoordinators, timeout: configuration.coordinatorTimeout / 2)
        self.admission = Admission(registry: registry, limits: configuration.limits)
        self.refusals = RefusalLog(wall: configuration.name)
        self.progress = (0, now, false)
    }

    /// What the machine observed since the last call, for the interpreter to log, count and trace.
    mutating func takeObservations() -> [Observation] { observations.take() }

    var applied: UInt64 { follower.applied }
    /// The entry after ``applied`` this build cannot read, where the node stopped (``LogFollower/unreadable``).
    var unreadable: UnreadableEntry? { follower.unreadable }
    var epoch: UInt32 { link.epoch }
    func isConnected(now: UInt64) -> Bool { link.isConnected(now: now) }

    /// The index, among the configured coordinators, of the one the node submits to and repairs
    /// from now: the sockets to send on.
    var currentCoordinator: Int { choice.currentIndex }
    /// Every configured coordinator, the first one first.
    var coordinators: [CoordinatorEndpoints] { choice.coordinators }
    /// The endpoints of the coordinator the node submits to now.
    var currentEndpoints: CoordinatorEndpoints { choice.current }
    /// The highest seq the node knows was ordered.
    var knownHead: UInt64 { follower.knownHead }
    /// Entries received past a gap, waiting for it to be repaired.
    var waitingBehindGap: Int { follower.waitingCount }
    /// Whether a client waits to hear of applied progress.
    var hasProgressWatchers: Bool { waiters.hasWatchers }

    /// Submissions sent or waiting to be, not yet known to be ordered.
    var pendingSubmissions: Int { submissions.count }

    /// Whether `entry` is this node's own (this process submitted it): only its effects run here.
    func isOwn(_ entry: Entry) -> Bool {
        entry.origin == configuration.id && entry.session == session
    }

    /// The first HELLO.
    mutating func start(now: UInt64 = 0) -> [Action] {
        choice.greeted(now: now)
        return [hello]
    }

    var hello: Action {
        .submit(HelloMessage(node: configuration.id, session: session, info: info).frames)
    }

    /// Follows the log from a local snapshot's seq, restored before the node started, whose
    /// instances are as the log says from `consistentFrom` on.
    mutating func resumeFollowing(from seq: UInt64, consistentFrom: UInt64) {
        (follower, self.consistentFrom) = (Self.follower(applied: seq, configuration: configuration, registry: admission.registry), consistentFrom)
    }

    /// A follower of the log from `applied`, which stops at an entry this build cannot read.
    static func follower(applied: UInt64, configuration: NodeConfiguration, registry: FlowRegistry) -> LogFollower {
        LogFollower(applied: applied, retryAfter: UInt64(configuration.retryInterval.microseconds), versions: ReadableVersions(registry))
    }

    // MARK: The ordered stream

    /// Messages from the publish socket: entries and heartbeats.
    mutating func receivePublished(_ messages: [Message], now: UInt64, received: UInt64 = 0) -> [Action] {
        var actions: [Action] = []
        var entries: [Entry] = []
        for message in messages {
            let parts = message.parts
            guard parts.count >= 2, let type = try? WireHeader.read(parts[1], expecting: .entries, .heartbeat, .clusterStatus, .alarm).0 else {
                observations.rejected(.malformed)
                continue
            }
            do {
                switch type {
                case .entries:
                    entries.append(contentsOf: try EntriesMessage(frames: parts).entries)
                case .heartbeat:
                    let heartbeat = try HeartbeatMessage(frames: parts)
                    // The entries published before it come first: its head counts them.
                    actions += deliver(&entries, received: received, now: now)
                    if choice.isReplicated, heartbeat.epoch > link.epoch, case .submit(let frames) = hello {
                        // A leader of a new term publishes; which coordinator it is, its WELCOME says.
                        actions.append(.greetEveryCoordinator(frames))
                    }
                    actions += adopt(link.heartbeat(epoch: heartbeat.epoch, head: heartbeat.head, applied: follower.applied, now: now), now: now)
                default:
                    break
                }
            } catch {
                observations.rejected((error as? ProtocolError)?.code ?? .malformed)
                observations.log(.warning, "bad message on the publish socket", ["flowkit.error": "\(error)"])
            }
        }
        return actions + deliver(&entries, received: received, now: now)
    }

    /// Hands published entries to the follower, in the order they came, and empties `entries`.
    private mutating func deliver(_ entries: inout [Entry], received: UInt64, now: UInt64) -> [Action] {
        guard !entries.isEmpty else { return [] }
        if let trace = configuration.trace {
            for entry in entries where trace.samples(entry.seq) { observations.hop(entry.seq, .nodeEntriesReceived, at: received) }
        }
        defer { entries = [] }
        return adopt(follower.receive(entries, now: now), now: now)
    }

    /// Replies from the coordinator's sync socket, decoded.
    mutating func receiveSync(_ replies: [SyncReply], now: UInt64) -> [Action] {
        var actions: [Action] = []
        for reply in replies {
            switch reply {
            case .range(let range):
                if !range.entries.isEmpty { observations.count(\.gapsRepaired, 1) }
            case .snapshotChunk:
                break
            case .error(let error):
                if let older = error.olderProtocol(than: coordinatorProtocols[currentCoordinator]) {
                    speak(older, to: currentCoordinator)
                } else if error.error.code == .notFound {
                    observations.log(.notice, "the entries to repair were compacted; joining through a snapshot", ["flowkit.error": "\(error.error.message)"])
                } else {
                    observations.log(.warning, "sync request refused", ["flowkit.error": "\(error.error)"])
                }
            case .invalid(let error):
                observations.rejected((error as? ProtocolError)?.code ?? .malformed)
                observations.log(.warning, "bad message on the sync socket", ["flowkit.error": "\(error)"])
            }
            actions += adopt(follower.receive(reply, now: now), now: now)
        }
        return actions
    }

    /// The snapshot of the last ``Action/restore(seq:instances:)`` was restored, or could not be.
    mutating func restored(_ succeeded: Bool, now: UInt64) -> [Action] {
        let held = afterRestore
        afterRestore = []
        guard succeeded else {
            observations.log(.error, "a snapshot did not restore; asking for another")
            return adopt(follower.startSnapshot(now: now), now: now)
        }
        link.applied(epoch: 0)  // the snapshot's term is not known; entries after it tell
        // The applied seq moved even if no entry followed the snapshot; what clients submitted
        // meanwhile goes now.
        return adopt(held, now: now) + waiters.released(applied: follower.applied).map(Self.action) + flush(now: now)
    }

    /// Takes what the log follower asks for as the node's own actions (the machine decides; its
    /// interpreter carries them out).
    mutating func adopt(_ followerActions: [LogFollower.Action], now: UInt64) -> [Action] {
        var actions: [Action] = []
        for (index, action) in followerActions.enumerated() {
            switch action {
            case .apply(let entries):
                actions += apply(entries, now: now)
            case .requestRange(let request):
                actions.append(.requestSync(request.frames))
            case .requestSnapshot(let request):
                actions.append(.requestSync(request.frames))
            case .restore(let seq, let instances, let then):
                // Nothing more until the snapshot is in: the rest waits for ``restored(_:now:)``.
                afterRestore = [.apply(then)] + followerActions[(index + 1)...]
                actions.append(.restore(seq: seq, instances: instances))
                return actions
            }
        }
        return actions
    }

    /// Entries the follower released, in seq order: applied, then the clients they settle answered.
    private mutating func apply(_ entries: [Entry], now: UInt64) -> [Action] {
        guard !entries.isEmpty else { return [] }
        var actions: [Action] = [.apply(entries)]
        link.applied(epoch: entries[entries.count - 1].epoch)
        for entry in entries where isOwn(entry) {
            // The node asks for no ACK of what is ordered (NodeInfo.ackOrdered): its entry is the
            // answer, and it often overtakes an ACK anyway.
            if let acknowledged = submissions.acknowledge(entry.submission) {
                choice.answered()
                actions += answer(acknowledged, seq: entry.seq, epoch: entry.epoch)
                traceAnswer(acknowledged, seq: entry.seq, learntAt: now, now: now)
            }
        }
        observations.count(\.applied, entries.count)
        actions += waiters.applied(follower.applied, now: now).map(Self.action)
        return actions
    }

    /// Answers the client waiting on an ordered submission, now or once applied.
    mutating func answer(_ pending: SubmissionQueue.Pending, seq: UInt64, epoch: UInt32) -> [Action] {
        guard case .client(let peer, let request, let wait, _) = pending.waiter else { return [] }
        return waiters.ordered(seq: seq, epoch: epoch, wait: wait, peer: peer, request: request, applied: follower.applied).map(Self.action)
    }

    static func action(_ waiterAction: ClientWaiters.Action) -> Action {
        switch waiterAction {
        case .reply(let reply, let peer): .reply(reply, to: peer)
        case .answerQuery(let request, let address, let peer): .answerQuery(request: request, address: address, to: peer)
        }
    }
}
