import CoreMetrics
import FlowKitCore
import Foundation
import Logging
import ZeroMQ

/// A node's serial heart: it runs the ``NodeMachine`` over the node's sockets and replicas, and
/// carries out what the machine asks for.
///
/// Every state change arrives as an ordered entry; nothing a client sends changes an instance
/// directly. Effects run only for entries this node (this session) submitted.
///
/// It lives on the node's I/O loop (its executor is the loop's thread), so the sockets' receive
/// handlers enter it in the loop turn that read a message, and its sends leave in the same turn.
actor NodeCore {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    let configuration: NodeConfiguration
    let registry: FlowRegistry
    let logger: Logger
    let sockets: NodeSockets
    let loop: IOLoop
    let counters: ClusterCounters
    /// The machine, the replicas, and the one interpreter of the machine's actions, over this
    /// process's sockets; built by ``start()``, whose replicas' effects submit through this actor.
    private(set) var interpreter: NodeInterpreter<NodeProcessIO>!
    private var startingMachine: NodeMachine?
    var localSnapshots: LocalSnapshots?

    init(configuration: NodeConfiguration, registry: FlowRegistry, logger: Logger, sockets: NodeSockets, loop: IOLoop) {
        self.unownedExecutor = loop.serialExecutor.asUnownedSerialExecutor()
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.sockets = sockets
        self.loop = loop
        let counters = ClusterCounters()
        self.counters = counters
        let info = NodeInfo(
            name: configuration.name,
            clientEndpoint: configuration.advertisedEndpoint ?? sockets.clientEndpoint,
            flows: registry.names,
            pid: ProcessInfo.processInfo.processIdentifier,
            ackOrdered: false,
            flowVersions: registry.versionsAboveOne
        )
        self.startingMachine = NodeMachine(
            configuration: configuration, registry: registry, session: UInt64.random(in: 1...UInt64.max), info: info,
            now: WallClock.micros()
        )
    }

    /// Builds the replicas (their effects submit back through this actor), restores a local
    /// snapshot if there is one, and says hello.
    func start() {
        let context = ReplicaContext(
            dependencies: DependencyValues._current,
            logger: logger,
            owner: EffectOwner(node: configuration.id, session: startingMachine!.session),
            submit: { [weak self] address, kind, codec, payload, term in
                await self?.submitFromEffect(address: address, kind: kind, codec: codec, payload: payload, term: term)
            },
            effectFailed: { [counters] _, _ in counters.effectFailures.add(1) }
        )
        let io = NodeProcessIO(configuration: configuration, logger: logger, sockets: sockets)
        interpreter = NodeInterpreter(
            machine: startingMachine!, replicas: ReplicaSet(
                registry: registry, context: context, logger: logger, restAfter: configuration.restAfter.map { UInt64(max(0, $0.microseconds)) }
            ), io: io,
            sink: ObservationSink(logger: logger, counters: counters, trace: configuration.trace)
        )
        startingMachine = nil
        io.core = self
        restoreLocalSnapshot()
        interpreter.run { $0.start(now: WallClock.micros()) }
    }

    var machine: NodeMachine { interpreter.machine }
    var replicas: ReplicaSet { interpreter.replicas }
    var session: UInt64 { machine.session }
    var applied: UInt64 { machine.applied }
    var isConnected: Bool { machine.isConnected(now: WallClock.micros()) }
    func status() -> NodeStatus { interpreter.status() }

    // MARK: Inputs

    /// Messages from the publish socket: entries and heartbeats.
    func receivePublished(_ messages: [Message]) {
        let now = WallClock.micros()
        interpreter.run { $0.receivePublished(messages, now: now, received: configuration.trace == nil ? 0 : now) }
    }

    /// Messages from coordinator `index` on its submit socket: acks, welcome, errors.
    func receiveFromCoordinator(_ messages: [Message], from index: Int) {
        interpreter.run { $0.receiveFromCoordinator(messages, from: index, now: WallClock.micros()) }
    }

    /// Replies from the coordinator's sync socket, decoded (by ``SyncReply/init(_:)``, off this
    /// thread).
    func receiveSync(_ replies: [SyncReply]) {
        interpreter.run { $0.receiveSync(replies, now: WallClock.micros()) }
    }

    /// Requests from the client socket.
    func receiveFromClients(_ messages: [Message]) {
        interpreter.run { $0.receiveFromClients(messages, now: WallClock.micros()) }
    }

    /// An event or cancel sent by an effect running here under ownership `term`.
    func submitFromEffect(address: Address, kind: EntryKind, codec: PayloadCodec, payload: [UInt8], term: UInt64) {
        interpreter.run {
            $0.submitFromEffect(address: address, kind: kind, codec: codec, payload: payload, term: term, now: WallClock.micros())
        }
    }

    /// Retries, repairs, timeouts, reports and snapshots; run every tick.
    func tick() {
        let now = WallClock.micros()
        interpreter.run { $0.tick(now: now) }
        saveLocalSnapshotIfDue(now: now)
    }

    /// Why the node must stop (``NodeMachine/refusal``), once it knows.
    var refusal: ProtocolError? { interpreter.machine.refusal }

    /// Digests hashed on the background thread (``NodeProcessIO/hash(_:)``).
    func hashed(_ results: [ReplicaSet.DigestResult], micros: UInt64) {
        interpreter.hashed(results, micros: micros)
    }

    /// A wake-up ``NodeProcessIO/wake(at:)`` set.
    func wake() {
        interpreter.wake()
    }

    /// Disconnects from the coordinators' sockets and connects again.
    func dropConnections() async {
        logger.warning("dropping the connections to the coordinator, as asked; reconnecting")
        for (index, endpoints) in machine.coordinators.enumerated() {
            for (socket, endpoint) in [(sockets.submit[index], endpoints.submit), (sockets.subscriber, endpoints.publish), (sockets.sync[index], endpoints.sync)] {
                _ = try? await socket.configure { socket in
                    try socket.disconnect(endpoint)
                    try socket.connect(endpoint)
                }
            }
        }
        interpreter.run { $0.reconnected(now: WallClock.micros()) }
    }

    /// Stops every effect: the node is going away.
    func shutDown() {
        replicas.shutDown()
    }
}

/// A node process's I/O: its sockets, its background thread for hashing, its loop's timers and
/// its hop trace.
final class NodeProcessIO: NodeIO {
    let configuration: NodeConfiguration
    let logger: Logger
    let sockets: NodeSockets
    /// Where hashed digests and wake-ups go back to.
    weak var core: NodeCore?

    init(configuration: NodeConfiguration, logger: Logger, sockets: NodeSockets) {
        self.configuration = configuration
        self.logger = logger
        self.sockets = sockets
    }

    var now: UInt64 { WallClock.micros() }
    var clientEndpoint: String { sockets.clientEndpoint }

    func submit(_ frames: [[UInt8]], to index: Int) {
        _ = try? sockets.submit[index].trySend(Message(parts: frames))
    }

    func report(_ message: NodeReportMessage, to index: Int, speaking version: UInt8) {
        // Encoded on the task pool: the summary is JSON, and the report is the node's sign of life,
        // which must not wait behind the background thread's hashing on a busy machine.
        let socket = sockets.submit[index]
        Task.detached { _ = try? socket.trySend(Message(parts: WireDialect.answer(message.frames, in: version))) }
    }

    func requestSync(_ frames: [[UInt8]], from index: Int) {
        _ = try? sockets.sync[index].trySend(Message(parts: frames))
    }

    func reply(_ reply: ClientReply, to peer: RouterEnvelope) {
        _ = try? sockets.client.trySend(peer.reply(reply.frames))
    }

    func applied(_ entries: [Entry], progressSent: Bool) {
        guard let trace = configuration.trace else { return }
        let appliedAt = WallClock.micros()
        for entry in entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .nodeApplied, at: appliedAt)
            if progressSent { trace.note(entry.seq, .nodeProgressSent, at: appliedAt) }
        }
    }

    func restored(seq: UInt64, instances: Int, error: (any Error)?) {
        if let error {
            logger.error("a snapshot did not restore", metadata: ["flowkit.error": "\(error)"])
        } else {
            logger.info("joined through a snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances)"])
        }
    }

    /// Hashes on the background thread, at idle priority; the node folds the digests back in on
    /// the loop's thread, where its work runs (a task without the preference ran the node on a
    /// pool thread, and the loop's messages waited for it).
    func hash(_ jobs: [ReplicaSet.DigestJob]) {
        let loop = sockets.client.loop
        BackgroundWork.idle.start { [weak core] in
            let (results, micros) = ReplicaSet.hash(jobs)
            Task(executorPreference: loop) { await core?.hashed(results, micros: micros) }
        }
    }

    func wake(at time: UInt64) {
        let (loop, delay) = (sockets.client.loop, time - min(time, now))
        Task(executorPreference: loop) { [weak core] in
            try? await Task.sleep(for: .microseconds(delay))
            await core?.wake()
        }
    }

    func reported() {
        configuration.trace?.flush()
    }
}

/// The sockets a node talks through: one submit and one sync socket per coordinator, in the order
/// of ``CoordinatorChoice/coordinators`` (one, unless the coordinators are replicated).
struct NodeSockets: Sendable {
    let client: AsyncSocket
    let clientEndpoint: String
    let submit: [AsyncSocket]
    let subscriber: AsyncSocket
    let sync: [AsyncSocket]
}
