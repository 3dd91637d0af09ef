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
actor NodeCore {
    let configuration: NodeConfiguration
    let session: UInt64
    private let registry: FlowRegistry
    let logger: Logger
    let sockets: NodeSockets
    private(set) var replicas: ReplicaSet!
    private var follower: LogFollower
    private var submissions: SubmissionQueue
    /// Clients owed an answer once this node has applied far enough.
    private var waiters: ClientWaiters
    private(set) var epoch: UInt32 = 0
    private var lastHeartbeat: UInt64 = 0
    private var welcomed = false
    /// The rule every emit, cancel and effect submission passes: the coordinator's own.
    private var admission: Admission
    var refusals: RefusalLog
    /// When the applied seq last moved, or the node was last at the head; a node behind the head
    /// that has not moved for ``NodeConfiguration/stallTimeout`` logs that it is stalled.
    private var progress = (applied: UInt64(0), at: WallClock.micros(), logged: false)
    /// Whether a batch of digests is being hashed off the loop thread.
    private var hashing = false
    private var lastReport: UInt64 = 0
    /// The applied seq of the last report: a node that applied nothing since, at the head, is idle.
    private var lastReportedApplied: UInt64 = 0
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

    var isConnected: Bool {
        lastHeartbeat != 0 && WallClock.micros() - lastHeartbeat < UInt64(configuration.coordinatorTimeout.microseconds)
    }

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
                    heartbeat(try HeartbeatMessage(frames: parts))
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

    private func heartbeat(_ heartbeat: HeartbeatMessage) {
        let wasConnected = isConnected
        lastHeartbeat = WallClock.micros()
        if !noteTerm(heartbeat.epoch, head: heartbeat.head), !wasConnected {
            reconnected()
        }
        perform(follower.noteHead(heartbeat.head, now: lastHeartbeat))
    }

    /// Notes the coordinator's term from any message that carries it (heartbeat, welcome, ack).
    ///
    /// - Returns: Whether a new term began, which this call has handled.
    @discardableResult
    private func noteTerm(_ newEpoch: UInt32, head: UInt64) -> Bool {
        guard newEpoch != epoch else { return false }
        if epoch != 0 {
            logger.notice("the coordinator began a new term", metadata: ["flowkit.epoch": "\(newEpoch)"])
        }
        epoch = newEpoch
        if head < follower.applied {
            coordinatorLostEntries(head: head)
        }
        reconnected()
        return true
    }

    /// A new coordinator term whose log ends before what this node applied: entries this node holds
    /// are gone from the order (an in-memory log, or a relaxed one after a machine crash). Keeping
    /// them would make this node diverge from every node that joins later, so it drops its state
    /// and rejoins from the coordinator's.
    private func coordinatorLostEntries(head: UInt64) {
        logger.critical(
            "the coordinator's log ends before what this node applied: entries were lost with the coordinator; rejoining from its state",
            metadata: ["flowkit.head": "\(head)", "flowkit.applied": "\(follower.applied)"]
        )
        counters.logLossesSeen.add(1)
        follower = LogFollower(retryAfter: UInt64(configuration.retryInterval.microseconds))
        perform(follower.startSnapshot(now: WallClock.micros()))
    }

    /// The coordinator is back (or new): say hello and resend everything unacknowledged.
    private func reconnected() {
        sendHello()
        submissions.resendAll()
        flushSubmissions()
    }

    /// Carries out what the log follower asks for.
    private func perform(_ actions: [LogFollower.Action]) {
        for action in actions {
            switch action {
            case .apply(let entries):
                apply(entries)
            case .requestRange(let request):
                _ = try? sockets.sync.trySend(Message(parts: request.frames))
            case .requestSnapshot(let request):
                logger.info("joining through a snapshot")
                _ = try? sockets.sync.trySend(Message(parts: request.frames))
            case .restore(let seq, let instances, let then):
                do {
                    try replicas.importStates(instances)
                    logger.info(
                        "joined through a snapshot",
                        metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"]
                    )
                } catch {
                    logger.error("a snapshot did not restore; asking for another", metadata: ["flowkit.error": "\(error)"])
                    perform(follower.startSnapshot(now: WallClock.micros()))
                    return
                }
                apply(then)
                // The applied seq moved even if no entry followed the snapshot.
                perform(waiters.released(applied: follower.applied))
            }
        }
    }

    /// Applies entries the follower released, in seq order.
    private func apply(_ entries: [Entry]) {
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
        reconnected()
    }

    /// Registers a progress watcher (see ``ClientWaiters/watch(peer:request:seconds:applied:now:)``).
    func watch(peer: RouterEnvelope, request: UInt64, seconds: UInt32) {
        perform(waiters.watch(peer: peer, request: request, seconds: seconds, applied: follower.applied, now: WallClock.micros()))
    }

    /// Sends what the waiting clients are owed.
    private func perform(_ actions: [ClientWaiters.Action]) {
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

    /// Replies from the sync socket: ranges, snapshot chunks, errors.
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

    // MARK: Submitting

    private func sendHello() {
        let hello = HelloMessage(
            node: configuration.id,
            session: session,
            info: NodeInfo(
                name: configuration.name,
                clientEndpoint: configuration.advertisedEndpoint ?? sockets.clientEndpoint,
                flows: registry.names,
                pid: ProcessInfo.processInfo.processIdentifier
            )
        )
        _ = try? sockets.submit.trySend(Message(parts: hello.frames))
    }

    /// An event or cancel sent by an effect running here. It passes the same rule as a client's:
    /// one the coordinator would refuse (an event over the size limit) is dropped here, and said so.
    func submitFromEffect(address: Address, kind: EntryKind, codec: PayloadCodec, payload: [UInt8]) {
        do {
            let admitted = try admit(kind: kind, codec: codec, address: address.description, payload: payload)
            _ = submissions.add(
                kind: admitted.kind, codec: admitted.codec, address: admitted.address, payload: admitted.payload,
                waiter: .effect, now: WallClock.micros()
            )
        } catch {
            let refusal = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
            counters.count(refused: refusal.code)
            logger.error(
                "an effect's submission was refused and dropped",
                metadata: ["flowkit.address": "\(address)", "flowkit.error": "\(refusal)"]
            )
        }
        flushSubmissions()
    }

    /// Applies the admission rule to what an effect submits.
    private func admit(kind: EntryKind, codec: PayloadCodec, address: String, payload: [UInt8]) throws -> Admission.Admitted {
        try admission.admit(kind: kind, codec: codec, address: address, payload: payload)
    }

    /// Applies the admission rule to a client's emit or cancel.
    func admit(_ request: ClientRequest) throws -> Admission.Admitted? {
        try admission.admit(request)
    }

    /// Queues a client's admitted emit or cancel.
    func submit(_ admitted: Admission.Admitted, waiter: SubmissionQueue.Waiter) throws {
        guard !submissions.isFull else {
            throw ProtocolError(.overloaded, "\(submissions.count) submissions are waiting for the coordinator; retry shortly")
        }
        _ = submissions.add(
            kind: admitted.kind, codec: admitted.codec, address: admitted.address, payload: admitted.payload,
            waiter: waiter, now: WallClock.micros()
        )
    }

    /// Sends what is due, in one SUBMIT message.
    func flushSubmissions() {
        let now = WallClock.micros()
        while true {
            let due = submissions.due(now: now, retryAfter: UInt64(configuration.retryInterval.microseconds))
            guard !due.isEmpty else { return }
            let message = SubmitMessage(origin: configuration.id, session: session, submissions: due)
            // A full queue drops the message; the submissions go again after the retry interval.
            _ = try? sockets.submit.trySend(Message(parts: message.frames))
        }
    }

    /// Messages from the coordinator on the submit socket: acks, welcome, errors.
    func receiveFromCoordinator(_ messages: [Message]) {
        for message in messages {
            let parts = message.parts
            do {
                guard let first = parts.first else { throw ProtocolError(.wrongFrameCount, "empty message") }
                let (type, _) = try WireHeader.read(first, expecting: .ack, .welcome, .error)
                switch type {
                case .ack:
                    handle(try AckMessage(frames: parts))
                case .welcome:
                    let welcome = try WelcomeMessage(frames: parts)
                    noteTerm(welcome.epoch, head: welcome.head)
                    lastHeartbeat = WallClock.micros()
                    let now = WallClock.micros()
                    if !welcomed, configuration.joinThroughSnapshot, follower.applied == 0, welcome.head > 0, !follower.isJoining {
                        perform(follower.startSnapshot(now: now))
                    } else {
                        perform(follower.noteHead(welcome.head, now: now))
                    }
                    welcomed = true
                default:
                    let error = try ErrorReply(frames: parts)
                    logger.error("the coordinator refused a message", metadata: ["flowkit.error": "\(error.error)"])
                }
            } catch {
                counters.count(rejected: (error as? ProtocolError)?.code ?? .malformed)
            }
        }
    }

    private func handle(_ ack: AckMessage) {
        let acknowledgedAt = configuration.trace == nil ? 0 : WallClock.micros()
        // An ACK's epoch is the one that ordered its entries: the coordinator's term, except in an
        // ACK of duplicates only, which may name the older term that ordered them. A new term is
        // noticed here, before the answers, so an ack from a coordinator that lost what this node
        // applied is answered only once the node has rejoined its history.
        if ack.acks.contains(where: { $0.status != .duplicate }) { noteTerm(ack.epoch, head: ack.head) }
        perform(follower.noteHead(ack.head, now: WallClock.micros()))
        for item in ack.acks {
            switch item.status {
            case .ordered, .duplicate:
                guard let pending = submissions.acknowledge(item.submission) else { continue }
                answer(pending, seq: item.seq, epoch: ack.epoch)
                traceAnswer(pending, seq: item.seq, learntAt: acknowledgedAt)
            case .refused:
                // Retryable refusals (overloaded, log unavailable) stay queued; anything else means
                // this node and the coordinator disagree about the flows: the client must know.
                let reason = item.reason ?? .internalError
                guard reason != .overloaded, reason != .internalError else {
                    submissions.noteRefusal(item.submission, reason: reason)
                    continue
                }
                guard let pending = submissions.acknowledge(item.submission) else { continue }
                let refusal = ProtocolError(reason, "the coordinator refused the entry: \(reason)")
                switch pending.waiter {
                case .client(let peer, let request, _, _):
                    reply(.error(request: request, refusal), to: peer)
                case .effect:
                    logger.error(
                        "the coordinator refused an effect's submission; it is dropped",
                        metadata: ["flowkit.address": "\(pending.submission.address)", "flowkit.error": "\(refusal)"]
                    )
                }
            }
        }
    }

    /// Traces a sampled submission of this node's, once it knows its seq (from its ACK or ENTRIES).
    private func traceAnswer(_ pending: SubmissionQueue.Pending, seq: UInt64, learntAt: UInt64) {
        guard let trace = configuration.trace, seq != 0, trace.samples(seq) else { return }
        trace.note(seq, .nodeReceived, at: pending.submission.submittedAt)
        trace.note(seq, .nodeSubmitted, at: pending.firstSent)
        trace.note(seq, .nodeAcknowledged, at: learntAt)
        trace.note(seq, .nodeAnswered, at: WallClock.micros())
    }

    /// What a client whose emit was not acknowledged within `timeout` is told.
    static func expiryError(_ pending: SubmissionQueue.Pending, wasSent: Bool, timeout: Duration) -> ProtocolError {
        let retrying = "the node keeps retrying, so it may still be ordered (the coordinator drops duplicates)"
        switch pending.lastRefusal {
        case .internalError?:
            return ProtocolError(.internalError, "the coordinator's log refused the write for \(timeout) (is its disk full?); \(retrying)")
        case .overloaded?:
            return ProtocolError(.overloaded, "the coordinator was overloaded for \(timeout); \(retrying)")
        default:
            guard wasSent else { return ProtocolError(.coordinatorUnavailable, "the coordinator is unreachable; the entry was not submitted") }
            return ProtocolError(.coordinatorUnavailable, "the coordinator did not acknowledge the entry within \(timeout); \(retrying)")
        }
    }

    /// Answers the client waiting on an ordered submission, now or once applied.
    private func answer(_ pending: SubmissionQueue.Pending, seq: UInt64, epoch: UInt32) {
        guard case .client(let peer, let request, let wait, _) = pending.waiter else { return }
        if wait == .ordered || (seq != 0 && seq <= follower.applied) || seq == 0 {
            reply(.emitted(request: request, seq: seq, epoch: epoch, applied: seq != 0 && seq <= follower.applied), to: peer)
        } else {
            waiters.waitUntilApplied(seq: seq, epoch: epoch, peer: peer, request: request)
        }
    }

    // MARK: Timers

    /// Retries, repairs, timeouts and reports; run every tick.
    func tick() {
        let now = WallClock.micros()
        flushSubmissions()
        perform(follower.tick(now: now))
        for (pending, wasSent) in submissions.expireWaiters(now: now) {
            guard case .client(let peer, let request, _, _) = pending.waiter else { continue }
            reply(.error(request: request, Self.expiryError(pending, wasSent: wasSent, timeout: configuration.emitTimeout)), to: peer)
        }
        perform(waiters.tick(applied: follower.applied, now: now))
        saveLocalSnapshotIfDue(now: now)
        noteProgress(now: now)
        hashChangedInstances()
        if now - lastReport >= UInt64(configuration.reportInterval.microseconds) {
            lastReport = now
            sendReport(now: now)
            configuration.trace?.flush()
        }
        if !isConnected, now - lastHeartbeat > UInt64(configuration.coordinatorTimeout.microseconds) * 4 {
            // Still nothing: say hello again, in case the coordinator restarted without us noticing,
            // and tell the operator where we are listening.
            lastHeartbeat = now - UInt64(configuration.coordinatorTimeout.microseconds)
            sendHello()
            logger.warning(
                "no heartbeat from the coordinator; emits wait or fail until it is reachable",
                metadata: [
                    "flowkit.coordinator.publish": "\(configuration.coordinator.publish)",
                    "flowkit.coordinator.submit": "\(configuration.coordinator.submit)",
                ]
            )
        }
    }

    /// Hashes the instances changed since their last digest, on the background thread: the loop
    /// thread only copies their states. One batch at a time, within the digest budget; none while
    /// the node is far behind (its digests would describe states long past).
    private func hashChangedInstances() {
        guard !hashing, follower.knownHead - min(follower.knownHead, follower.applied) <= Self.catchingUpLag else { return }
        let jobs = replicas.takeDigestJobs()
        guard !jobs.isEmpty else { return }
        hashing = true
        BackgroundWork.shared.start { [weak self] in
            let (results, micros) = ReplicaSet.hash(jobs)
            Task { await self?.finishHashing(results, micros: micros) }
        }
    }

    private func finishHashing(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        hashing = false
        replicas.finishDigestJobs(results, hashingMicros: micros)
    }

    /// Logs, once, a node that has applied nothing for the stall timeout while behind the head:
    /// an entry it cannot get, or cannot apply, would otherwise hold it back in silence.
    private func noteProgress(now: UInt64) {
        let applied = follower.applied
        if applied != progress.applied || applied >= follower.knownHead {
            if progress.logged {
                logger.notice("applying again", metadata: ["flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)"])
            }
            progress = (applied, now, false)
        } else if !progress.logged, now - min(now, progress.at) >= UInt64(configuration.stallTimeout.microseconds) {
            progress.logged = true
            logger.error(
                "stalled: nothing applied for \(configuration.stallTimeout) while behind the head; waiting for seq \(applied + 1)",
                metadata: [
                    "flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)",
                    "flowkit.waiting": "\(follower.waitingCount)", "flowkit.joining": "\(follower.isJoining)",
                ]
            )
        }
    }

    private func updateGauges() {
        let gauges = counters.gauges
        gauges.applied.record(Double(follower.applied))
        gauges.head.record(Double(follower.knownHead))
        gauges.lag.record(Double(follower.knownHead - min(follower.knownHead, follower.applied)))
        gauges.runningEffects.record(Double(replicas.runningEffects))
        gauges.pendingSubmissions.record(Double(submissions.count))
        gauges.instances.record(Double(replicas.count))
    }

    /// A node this far behind the head hashes nothing for its reports until it has caught up: its
    /// digests would describe states the coordinator passed long ago, and the hashing would slow
    /// the catching up (a twentieth of a replay).
    static let catchingUpLag: UInt64 = 10_000

    private func sendReport(now: UInt64) {
        updateGauges()
        let catchingUp = follower.knownHead - min(follower.knownHead, follower.applied) > Self.catchingUpLag
        // Idle at the head, nothing competes with hashing: bring every digest up to date now, so
        // the report describes the state exactly (digestSeq) instead of catching up at the budget's
        // pace for seconds after a load stops.
        let idle = follower.applied == lastReportedApplied && follower.applied >= follower.knownHead
        lastReportedApplied = follower.applied
        if idle { _ = replicas.combinedDigest(exact: true) }
        let changed = catchingUp ? [:] : replicas.takeChanged(hashing: false)
        var digests: [String: InstanceDigest] = [:]
        for (address, digest) in changed { digests[address.description] = digest }
        let report = NodeReport(
            name: configuration.name,
            digest: replicas.lastCombinedDigest.description,
            digests: digests,
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            effectsLost: 0,
            pendingSubmissions: submissions.count,
            connected: isConnected,
            digestSeq: !catchingUp && replicas.digestsAreCurrent ? follower.applied : 0
        )
        let message = NodeReportMessage(node: configuration.id, applied: follower.applied, time: now, report: report)
        // Encoding a thousand digests as JSON takes milliseconds: not on the loop thread.
        let socket = sockets.submit
        BackgroundWork.shared.start { _ = try? socket.trySend(Message(parts: message.frames)) }
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
