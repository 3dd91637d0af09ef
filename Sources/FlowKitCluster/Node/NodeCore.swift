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
    var machine: NodeMachine
    let configuration: NodeConfiguration
    let registry: FlowRegistry
    let logger: Logger
    let sockets: NodeSockets
    var replicas: ReplicaSet!
    /// The applied seq of the last report: a node that applied nothing since, at the head, is idle.
    var lastReportedApplied: UInt64 = 0
    /// A task waits for the digest round's next slice to be due (``hashNextSlice()``).
    var digestSliceScheduled = false
    var localSnapshots: LocalSnapshots?
    let counters: ClusterCounters

    init(configuration: NodeConfiguration, registry: FlowRegistry, logger: Logger, sockets: NodeSockets, loop: IOLoop) {
        self.unownedExecutor = loop.serialExecutor.asUnownedSerialExecutor()
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.sockets = sockets
        let counters = ClusterCounters()
        self.counters = counters
        let info = NodeInfo(
            name: configuration.name,
            clientEndpoint: configuration.advertisedEndpoint ?? sockets.clientEndpoint,
            flows: registry.names,
            pid: ProcessInfo.processInfo.processIdentifier,
            ackOrdered: false
        )
        self.machine = NodeMachine(
            configuration: configuration, registry: registry, session: UInt64.random(in: 1...UInt64.max), info: info,
            logger: logger, counters: counters, now: WallClock.micros()
        )
    }

    /// Builds the replicas (their effects submit back through this actor), restores a local
    /// snapshot if there is one, and says hello.
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
        perform(machine.start(now: WallClock.micros()))
    }

    var session: UInt64 { machine.session }
    var applied: UInt64 { machine.applied }
    var isConnected: Bool { machine.isConnected(now: WallClock.micros()) }

    // MARK: Inputs

    /// Messages from the publish socket: entries and heartbeats.
    func receivePublished(_ messages: [Message]) {
        let now = WallClock.micros()
        perform(machine.receivePublished(messages, now: now, received: configuration.trace == nil ? 0 : now))
    }

    /// Messages from coordinator `index` on its submit socket: acks, welcome, errors.
    func receiveFromCoordinator(_ messages: [Message], from index: Int) {
        perform(machine.receiveFromCoordinator(messages, from: index, now: WallClock.micros()))
    }

    /// Replies from the coordinator's sync socket, decoded (by ``SyncReply/init(_:)``, off this
    /// thread).
    func receiveSync(_ replies: [SyncReply]) {
        perform(machine.receiveSync(replies, now: WallClock.micros()))
    }

    /// Requests from the client socket.
    func receiveFromClients(_ messages: [Message]) {
        perform(machine.receiveFromClients(messages, now: WallClock.micros()))
    }

    /// An event or cancel sent by an effect running here.
    func submitFromEffect(address: Address, kind: EntryKind, codec: PayloadCodec, payload: [UInt8]) {
        perform(machine.submitFromEffect(address: address, kind: kind, codec: codec, payload: payload, now: WallClock.micros()))
    }

    /// Retries, repairs, timeouts, reports and snapshots; run every tick.
    func tick() {
        let now = WallClock.micros()
        perform(machine.tick(now: now))
        saveLocalSnapshotIfDue(now: now)
    }

    /// Disconnects from the coordinators' sockets and connects again.
    func dropConnections() async {
        logger.warning("dropping the connections to the coordinator, as asked; reconnecting")
        for (index, endpoints) in machine.choice.coordinators.enumerated() {
            for (socket, endpoint) in [(sockets.submit[index], endpoints.submit), (sockets.subscriber, endpoints.publish), (sockets.sync[index], endpoints.sync)] {
                _ = try? await socket.configure { socket in
                    try socket.disconnect(endpoint)
                    try socket.connect(endpoint)
                }
            }
        }
        perform(machine.reconnected(now: WallClock.micros()))
    }

    /// The submit socket to the coordinator the node submits to now.
    var submitSocket: AsyncSocket { sockets.submit[machine.currentCoordinator] }

    /// Stops every effect: the node is going away.
    func shutDown() {
        replicas.shutDown()
    }

    // MARK: Carrying out

    func perform(_ actions: [NodeMachine.Action]) {
        for action in actions {
            switch action {
            case .submit(let frames):
                // A full queue drops the message; submissions go again after the retry interval.
                _ = try? submitSocket.trySend(Message(parts: frames))
            case .requestSync(let frames):
                _ = try? sockets.sync[machine.currentCoordinator].trySend(Message(parts: frames))
            case .switchCoordinator:
                break  // the sockets to send on follow the machine's choice
            case .greetEveryCoordinator(let frames):
                for socket in sockets.submit { _ = try? socket.trySend(Message(parts: frames)) }
            case .reply(let reply, let peer):
                self.reply(reply, to: peer)
            case .apply(let entries):
                apply(entries)
            case .restore(let seq, let instances):
                restore(seq: seq, instances: instances)
            case .answerQuery(let request, let address, let peer):
                answerQuery(request: request, address: address, to: peer)
            case .answerStatus(let request, let peer):
                reply(.status(request: request, json: JSONFrame.encode(status())), to: peer)
            case .report:
                sendReport(now: WallClock.micros())
                // What changed since is hashed once per report, for the next one: an instance that
                // changes all the time is hashed once a report, not once a tick.
                hashChangedInstances()
                configuration.trace?.flush()
            }
        }
    }

    /// Applies entries in seq order, running the effects of this node's own.
    func apply(_ entries: [Entry]) {
        for entry in entries { replicas.apply(entry, runEffects: machine.isOwn(entry)) }
        guard let trace = configuration.trace else { return }
        let appliedAt = WallClock.micros()
        for entry in entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .nodeApplied, at: appliedAt)
            if machine.waiters.hasWatchers { trace.note(entry.seq, .nodeProgressSent, at: appliedAt) }
        }
    }

    /// A snapshot to join through: it replaces every instance.
    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) {
        do {
            try replicas.importStates(instances)
        } catch {
            logger.error("a snapshot did not restore", metadata: ["flowkit.error": "\(error)"])
            perform(machine.restored(false, now: WallClock.micros()))
            return
        }
        logger.info("joined through a snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"])
        perform(machine.restored(true, now: WallClock.micros()))
    }

    func reply(_ reply: ClientReply, to peer: RouterEnvelope) {
        _ = try? sockets.client.trySend(peer.reply(reply.frames))
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
