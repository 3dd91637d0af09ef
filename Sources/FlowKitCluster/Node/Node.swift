import FlowKitCore
import Logging
import Synchronization
import ZeroMQ

/// A process that hosts flow instances: it applies the coordinator's ordered stream to them, takes
/// emits from clients, and runs the effects of the entries it submitted.
///
/// ```swift
/// let node = Node(configuration: NodeConfiguration(id: 1, coordinator: endpoints), registry: registry, logger: logger)
/// try await node.run { clientEndpoint in print("clients connect to \(clientEndpoint)") }
/// ```
///
/// `run` serves until ``shutdown()`` is called or its task is cancelled. The node subscribes
/// before it asks for anything, so it misses nothing between a snapshot and the live stream, and it
/// reconnects to a restarted coordinator by itself.
public final class Node: Sendable {
    private let configuration: NodeConfiguration
    private let registry: FlowRegistry
    private let logger: Logger
    private let stop = StopSignal()
    /// Why the node stopped by itself (``NodeMachine/refusal``): `run` throws it.
    private let refused = Mutex<ProtocolError?>(nil)
    private let running = Mutex<NodeCore?>(nil)

    public init(configuration: NodeConfiguration, registry: FlowRegistry, logger: Logger) {
        self.configuration = configuration
        self.registry = registry
        var logger = logger
        logger[metadataKey: "flowkit.node.id"] = "\(configuration.id)"
        self.logger = logger
    }

    /// Connects, joins and serves until shut down.
    ///
    /// - Parameter onReady: Called with the client endpoint (the port the OS chose included) once
    ///   clients can connect.
    public func run(onReady: @Sendable (String) -> Void = { _ in }) async throws {
        try configuration.limits.validate(against: configuration.transport)
        try await withIOLoop(name: "node-\(configuration.id)-io", linger: configuration.transport.linger, logger: logger) { loop in
            try await serve(loop: loop, onReady: onReady)
        }
    }

    /// Asks a running node to stop; `run` returns once it has closed everything.
    public func shutdown() {
        stop.signal()
    }

    /// Stops the node for good reason of its own: `run` throws `refusal` once it has closed everything.
    private func stop(refusing refusal: ProtocolError) {
        guard refused.withLock({ refused in
            defer { refused = refused ?? refusal }
            return refused == nil
        }) else { return }
        stop.signal()
    }

    /// Drops the node's connections to the coordinator and makes them again, losing whatever was
    /// in flight on them: a fault the node must survive (it repairs gaps and resends unacknowledged
    /// submissions). `flowkit node` does this on SIGUSR1, for fault-injection runs.
    public func dropConnections() async {
        guard let core = running.withLock({ $0 }) else { return }
        await core.dropConnections()
    }

    private func serve(loop: IOLoop, onReady: @Sendable (String) -> Void) async throws {
        let configuration = self.configuration
        let transport = configuration.transport
        let coordinatorKey = configuration.coordinatorPublicKey
        let authentication = try await transport.startAuthentication(on: loop, logger: logger)
        let socketConfiguration = AsyncSocket.Configuration(receiveBufferCapacity: 8_192, sendQueueCapacity: 65_536)
        // Every coordinator, when they are replicated: only the leader publishes, and the node
        // submits to one at a time (CoordinatorChoice), through a socket of its own.
        let coordinators = CoordinatorChoice(coordinator: configuration.coordinator, others: configuration.otherCoordinators, timeout: .seconds(1)).coordinators
        // Subscribe first, so nothing published from here on is missed.
        let subscriber = try await transport.openClient(
            .sub, on: loop, configuration: socketConfiguration, connecting: coordinators.map(\.publish), serverKey: coordinatorKey
        ) { socket in
            if let hwm = configuration.subscriberHighWaterMark { try socket.setOption(.receiveHighWaterMark, hwm) }
            if let bytes = configuration.subscriberBufferBytes { try socket.setOption(.receiveBufferBytes, bytes) }
            try socket.subscribe(EntriesMessage.batchTopic)
            try socket.subscribe(ControlTopic.heartbeat)
        }
        // What waits for a coordinator that cannot take it (gone, or not connected yet) is bounded
        // in bytes: the node resends unacknowledged submissions every retry interval, and without
        // the bound each round of them queued behind a dead coordinator, without end. A SUBMIT
        // refused here goes again at the next retry.
        var coordinatorConfiguration = socketConfiguration
        coordinatorConfiguration.sendQueueBytes = 16 << 20
        var submits: [AsyncSocket] = []
        var syncs: [AsyncSocket] = []
        for coordinator in coordinators {
            submits.append(
                try await transport.openClient(
                    .dealer, on: loop, configuration: coordinatorConfiguration, connecting: [coordinator.submit], serverKey: coordinatorKey
                )
            )
            syncs.append(
                try await transport.openClient(
                    .dealer, on: loop, configuration: coordinatorConfiguration, connecting: [coordinator.sync], serverKey: coordinatorKey
                )
            )
        }
        var clientConfiguration = socketConfiguration
        if let trace = configuration.trace {
            clientConfiguration.onSent = { message in
                guard let (_, body) = RouterEnvelope.split(message), case .emitted(_, let seq, _, _)? = try? ClientReply(frames: body),
                    trace.samples(seq)
                else { return }
                trace.note(seq, .nodeAnswerSent, at: WallClock.micros())
            }
        }
        let (client, clientEndpoint) = try await transport.openServer(
            .router, on: loop, configuration: clientConfiguration, binding: configuration.clientEndpoint
        )
        let sockets = NodeSockets(client: client, clientEndpoint: clientEndpoint, submit: submits, subscriber: subscriber, sync: syncs)
        let core = NodeCore(configuration: configuration, registry: registry, logger: logger, sockets: sockets, loop: loop)
        await core.start()
        // The node's work runs on the I/O loop's thread: each socket hands what it read to the
        // core in the same loop turn, with no task or thread hop, and what the core sends leaves
        // in that turn too. Effects are unstructured tasks and run on the cooperative pool.
        try await subscriber.handleReceived { batch in core.assumeIsolated { $0.receivePublished(batch) } }
        for (index, submit) in submits.enumerated() {
            try await submit.handleReceived { batch in core.assumeIsolated { $0.receiveFromCoordinator(batch, from: index) } }
        }
        try await client.handleReceived { batch in core.assumeIsolated { $0.receiveFromClients(batch) } }
        running.withLock { $0 = core }
        defer { running.withLock { $0 = nil } }
        logger.info(
            "node ready",
            metadata: ["flowkit.node.client": "\(clientEndpoint)", "flowkit.node.coordinator": "\(configuration.coordinator.submit)"]
        )
        onReady(clientEndpoint)

        await withDiscardingTaskGroup { group in
            // Sync replies are decoded on the cooperative pool, in order, and applied on the loop:
            // a replaying node decodes one range on the other core while it applies the last.
            // The stream between them holds at most what the node asked for (a range or two in
            // flight, or one snapshot), which the socket would hold otherwise.
            let (syncReplies, syncContinuation) = AsyncStream.makeStream(of: [SyncReply].self)
            for sync in syncs {
                group.addTask {
                    while let batch = try? await sync.receiveBatch(max: 64) { syncContinuation.yield(batch.map(SyncReply.init)) }
                    syncContinuation.finish()
                }
            }
            group.addTask(executorPreference: loop) {
                for await replies in syncReplies { await core.receiveSync(replies) }
            }
            group.addTask(executorPreference: loop) {
                await every(configuration.tickInterval, on: loop) {
                    await core.tick()
                    if let refusal = await core.refusal { self.stop(refusing: refusal) }
                }
            }
            await stop.wait()
            logger.info("node stopping")
            await core.shutDown()
            group.cancelAll()
            for socket in [client, subscriber] + submits + syncs { await socket.close(linger: transport.linger) }
        }
        await authentication?.stop()
        if let refusal = refused.withLock({ $0 }) { throw refusal }
    }
}
