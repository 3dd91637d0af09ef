import CoreMetrics
import FlowKit
import Foundation
import Logging
import ZeroMQ

/// A node's serial heart: it applies the ordered stream to its instances, submits what clients and
/// effects emit, and answers clients once their entries are ordered or applied.
///
/// Every state change arrives through ``receive(_:)`` as an ordered entry; nothing a client sends
/// changes an instance directly. Effects run only for entries this node (this session) submitted.
actor NodeCore: LogFollowing {
    let configuration: NodeConfiguration
    let session: UInt64
    let registry: FlowRegistry
    let logger: Logger
    let sockets: NodeSockets
    var replicas: ReplicaSet!
    var follower: LogFollower
    var submissions: SubmissionQueue
    /// Clients owed an answer once this node has applied far enough.
    var waiters: ClientWaiters
    /// The coordinator's term and liveness.
    var link: CoordinatorLink
    /// The rule every emit, cancel and effect submission passes: the coordinator's own.
    var admission: Admission
    var refusals: RefusalLog
    /// When the applied seq last moved, or the node was last at the head; a node behind the head
    /// that has not moved for ``NodeConfiguration/stallTimeout`` logs that it is stalled.
    var progress = (applied: UInt64(0), at: WallClock.micros(), logged: false)
    /// Whether a batch of digests is being hashed off the loop thread.
    var hashing = false
    var lastReport: UInt64 = 0
    /// The applied seq of the last report: a node that applied nothing since, at the head, is idle.
    var lastReportedApplied: UInt64 = 0
    var localSnapshots: LocalSnapshots?
    let counters = ClusterCounters()

    init(configuration: NodeConfiguration, registry: FlowRegistry, logger: Logger, sockets: NodeSockets) {
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.sockets = sockets
        self.session = UInt64.random(in: 1...UInt64.max)
        self.submissions = SubmissionQueue(capacity: configuration.maxPendingSubmissions)
        self.follower = LogFollower(retryAfter: UInt64(configuration.retryInterval.microseconds))
        self.admission = Admission(registry: registry, limits: configuration.limits)
        self.refusals = RefusalLog(wall: configuration.name)
        self.waiters = ClientWaiters(queryTimeout: configuration.queryTimeout)
        self.link = CoordinatorLink(timeout: configuration.coordinatorTimeout, joinsThroughSnapshot: configuration.joinThroughSnapshot)
    }

    /// Builds the replicas; their effects submit back through this actor.
    func start() {
        let context = ReplicaContext(
            dependencies: DependencyValues._current,
            logger: logger,
            submit: { [weak self] address, kind, codec, payload in
                await self?.submitFromEffect(address: address, kind: kind, codec: codec, payload: payload)
            },
            effectFailed: { [counters] _, _ in counters.effectFailures.add(1) }
        )
        replicas = ReplicaSet(registry: registry, context: context, logger: logger)
        restoreLocalSnapshot()
        sendHello()
    }

    var isConnected: Bool { link.isConnected(now: WallClock.micros()) }
    /// The coordinator's term, as last heard.
    var epoch: UInt32 { link.epoch }

    // MARK: The ordered stream

    /// Messages from the publish socket: entries and heartbeats.
    func receivePublished(_ messages: [Message]) {
        let received = configuration.trace == nil ? 0 : WallClock.micros()
        var entries: [Entry] = []
        for message in messages {
            let parts = message.parts
            guard parts.count >= 2, let type = try? WireHeader.read(parts[1], expecting: .entries, .heartbeat, .clusterStatus, .alarm).0 else {
                counters.count(rejected: .malformed)
                continue
            }
            do {
                switch type {
                case .entries:
                    entries.append(contentsOf: try EntriesMessage(frames: parts).entries)
                case .heartbeat:
                    let heartbeat = try HeartbeatMessage(frames: parts)
                    perform(link.heartbeat(epoch: heartbeat.epoch, head: heartbeat.head, applied: follower.applied, now: WallClock.micros()))
                default:
                    break
                }
            } catch {
                counters.count(rejected: (error as? ProtocolError)?.code ?? .malformed)
                logger.warning("bad message on the publish socket", metadata: ["flowkit.error": "\(error)"])
            }
        }
        if let trace = configuration.trace {
            for entry in entries where trace.samples(entry.seq) { trace.note(entry.seq, .nodeEntriesReceived, at: received) }
        }
        if !entries.isEmpty { perform(follower.receive(entries, now: WallClock.micros())) }
    }

    /// Carries out what the coordinator link asks for.
    func perform(_ actions: [CoordinatorLink.Action]) {
        for action in actions {
            switch action {
            case .newTerm(let epoch, let previous):
                if previous != 0 { logger.notice("the coordinator began a new term", metadata: ["flowkit.epoch": "\(epoch)"]) }
            case .rejoin(let head):
                coordinatorLostEntries(head: head)
            case .reconnect:
                reconnected()
            case .helloAgain:
                sendHello()
                logger.warning(
                    "no heartbeat from the coordinator; emits wait or fail until it is reachable",
                    metadata: [
                        "flowkit.coordinator.publish": "\(configuration.coordinator.publish)",
                        "flowkit.coordinator.submit": "\(configuration.coordinator.submit)",
                    ]
                )
            case .noteHead(let head):
                perform(follower.noteHead(head, now: WallClock.micros()))
            case .joinThroughSnapshot:
                logger.info("joining through a snapshot")
                perform(follower.startSnapshot(now: WallClock.micros()))
            }
        }
    }

    /// A new coordinator term whose log ends before what this node applied: entries this node holds
    /// are gone from the order (an in-memory log, or a relaxed one after a machine crash). Keeping
    /// them would make this node diverge from every node that joins later, so it drops its state
    /// and rejoins from the coordinator's.
    func coordinatorLostEntries(head: UInt64) {
        logger.critical(
            "the coordinator's log ends before what this node applied: entries were lost with the coordinator; rejoining from its state",
            metadata: ["flowkit.head": "\(head)", "flowkit.applied": "\(follower.applied)"]
        )
        counters.logLossesSeen.add(1)
        follower = LogFollower(retryAfter: UInt64(configuration.retryInterval.microseconds))
        perform(follower.startSnapshot(now: WallClock.micros()))
    }

    /// The coordinator is back (or new): say hello and resend everything unacknowledged.
    func reconnected() {
        sendHello()
        submissions.resendAll()
        flushSubmissions()
    }

    var syncSocket: AsyncSocket { sockets.sync }

    /// A snapshot to join through: it replaces every instance.
    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) throws {
        do {
            try replicas.importStates(instances)
            logger.info("joined through a snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"])
        } catch {
            logger.error("a snapshot did not restore; asking for another", metadata: ["flowkit.error": "\(error)"])
            throw error
        }
    }

    func followed(restored: Bool) {
        // The applied seq moved even if no entry followed the snapshot.
        if restored { perform(waiters.released(applied: follower.applied)) }
    }

    /// Applies entries the follower released, in seq order.
    func apply(_ entries: [Entry]) {
        guard !entries.isEmpty else { return }
        let learnt = configuration.trace == nil ? 0 : WallClock.micros()
        for entry in entries {
            let mine = entry.origin == configuration.id && entry.session == session
            replicas.apply(entry, runEffects: mine)
            // Its ENTRIES often arrive before its ACK: it is ordered either way.
            if mine, let acknowledged = submissions.acknowledge(entry.submission) {
                answer(acknowledged, seq: entry.seq, epoch: entry.epoch)
                traceAnswer(acknowledged, seq: entry.seq, learntAt: learnt)
            }
        }
        counters.applied.add(entries.count)
        let appliedAt = WallClock.micros()
        perform(waiters.applied(follower.applied, now: appliedAt))
        if let trace = configuration.trace {
            let progressSent = WallClock.micros()
            for entry in entries where trace.samples(entry.seq) {
                trace.note(entry.seq, .nodeApplied, at: appliedAt)
                if waiters.hasWatchers { trace.note(entry.seq, .nodeProgressSent, at: progressSent) }
            }
        }
    }

    /// Disconnects from the coordinator's three sockets and connects again.
    func dropConnections() async {
        let endpoints = configuration.coordinator
        logger.warning("dropping the connections to the coordinator, as asked; reconnecting")
        for (socket, endpoint) in [(sockets.submit, endpoints.submit), (sockets.subscriber, endpoints.publish), (sockets.sync, endpoints.sync)] {
            _ = try? await socket.perform { socket in
                try socket.disconnect(endpoint)
                try socket.connect(endpoint)
            }
        }
        perform(link.reconnected())
    }

    /// Registers a progress watcher (see ``ClientWaiters/watch(peer:request:seconds:applied:now:)``).
    func watch(peer: RouterEnvelope, request: UInt64, seconds: UInt32) {
        perform(waiters.watch(peer: peer, request: request, seconds: seconds, applied: follower.applied, now: WallClock.micros()))
    }

    /// Sends what the waiting clients are owed.
    func perform(_ actions: [ClientWaiters.Action]) {
        for action in actions {
            switch action {
            case .reply(let reply, let peer):
                self.reply(reply, to: peer)
            case .answerQuery(let request, let address, let peer):
                answerQuery(request: request, address: address, to: peer)
            }
        }
    }

    // MARK: Gap repair and joining

    /// Replies from the coordinator's sync socket, decoded (by ``SyncReply/init(_:)``, off this
    /// thread).
    func receiveSync(_ replies: [SyncReply]) {
        let now = WallClock.micros()
        for reply in replies {
            switch reply {
            case .range(let range):
                if !range.entries.isEmpty { counters.gapsRepaired.add(1) }
                perform(follower.receive(range, now: now))
            case .snapshotChunk(let chunk):
                perform(follower.receive(chunk, now: now))
            case .error(let error):
                if error.error.code == .notFound {
                    logger.notice("the entries to repair were compacted; joining through a snapshot", metadata: ["flowkit.error": "\(error.error.message)"])
                } else {
                    logger.warning("sync request refused", metadata: ["flowkit.error": "\(error.error)"])
                }
                perform(follower.receive(error, now: now))
            case .invalid(let error):
                counters.count(rejected: (error as? ProtocolError)?.code ?? .malformed)
                logger.warning("bad message on the sync socket", metadata: ["flowkit.error": "\(error)"])
            }
        }
    }

    // MARK: Answers

    func reply(_ reply: ClientReply, to peer: RouterEnvelope) {
        _ = try? sockets.client.trySend(peer.reply(reply.frames))
    }

    var applied: UInt64 { follower.applied }

    /// Starts following the log from a local snapshot's seq.
    func resumeFollowing(from seq: UInt64) {
        follower = LogFollower(applied: seq, retryAfter: UInt64(configuration.retryInterval.microseconds))
    }
    var registryNames: [String] { registry.names }
    func registryFlow(for address: Address) throws -> any RegisteredFlow { try registry.flow(for: address) }
    var knownHead: UInt64 { follower.knownHead }
    var waitingBehindGap: Int { follower.waitingCount }
    var pendingSubmissionCount: Int { submissions.count }

    func waitForApplied(_ min: UInt64, peer: RouterEnvelope, request: UInt64, address: String) {
        waiters.waitForQuery(min: min, address: address, peer: peer, request: request, now: WallClock.micros())
    }

}

/// The sockets a node talks through.
struct NodeSockets: Sendable {
    let client: AsyncSocket
    let clientEndpoint: String
    let submit: AsyncSocket
    let subscriber: AsyncSocket
    let sync: AsyncSocket
}
