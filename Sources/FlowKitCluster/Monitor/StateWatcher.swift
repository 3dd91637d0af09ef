import FlowKitCore
import Logging
import ZeroMQ

/// Replays the ordered log into a passive replica, without asking any node, and reports each new
/// state of one instance: what `flowkit monitor --state` shows.
///
/// It joins like a node (subscribe, snapshot, entries after it, gap repair) but never submits and
/// never runs effects.
public final class StateWatcher: Sendable {
    /// A state of the watched instance, after the entry at `seq`.
    public struct Update: Sendable {
        public var seq: UInt64
        public var state: [UInt8]
        public var digest: StateDigest
    }

    private let endpoints: CoordinatorEndpoints
    private let address: Address
    private let registry: FlowRegistry
    private let logger: Logger

    private let transport: TransportOptions
    private let serverPublicKey: CurveKey?

    public init(
        endpoints: CoordinatorEndpoints,
        address: String,
        registry: FlowRegistry,
        transport: TransportOptions = TransportOptions(),
        serverPublicKey: CurveKey? = nil,
        logger: Logger
    ) throws {
        self.endpoints = endpoints
        self.transport = transport
        self.serverPublicKey = serverPublicKey
        self.address = try Address(parsing: address)
        _ = try registry.flow(for: self.address)
        self.registry = registry
        self.logger = logger
    }

    /// The instance's states as they change, until the task is cancelled.
    public func updates() async throws -> AsyncThrowingStream<Update, any Error> {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "watcher-io", logger: logger)
        let (subscriber, sync) = try await loop.openFollowerSockets(to: endpoints, transport: transport, serverKey: serverPublicKey)
        let replicas = ReplicaSet(registry: registry, context: .passive(logger: logger), logger: logger)
        let core = WatcherCore(address: address, replicas: replicas, sync: sync)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Update.self)
        let task = Task {
            await core.start(continuation)
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while let batch = try? await subscriber.receiveBatch() { await core.followPublished(batch) }
                }
                group.addTask {
                    while let batch = try? await sync.receiveBatch() { await core.followSync(batch) }
                }
                group.addTask { await every(.milliseconds(100)) { await core.tickFollower() } }
            }
        }
        continuation.onTermination = { _ in
            task.cancel()
            Task {
                await subscriber.close(linger: .zero)
                await sync.close(linger: .zero)
                await loop.shutdown(linger: .zero)
                await context.terminate()
            }
        }
        return stream
    }
}

/// The watcher's serial state: the follower, the passive replicas and who to tell.
private actor WatcherCore: LogFollowing {
    let address: Address
    let replicas: ReplicaSet
    let syncSocket: AsyncSocket
    var follower = LogFollower()
    var continuation: AsyncThrowingStream<StateWatcher.Update, any Error>.Continuation?
    var lastReported: UInt64 = 0

    init(address: Address, replicas: ReplicaSet, sync: AsyncSocket) {
        self.address = address
        self.replicas = replicas
        self.syncSocket = sync
    }

    func start(_ continuation: AsyncThrowingStream<StateWatcher.Update, any Error>.Continuation) {
        self.continuation = continuation
        carryOut(follower.startSnapshot(now: WallClock.micros()))
    }

    func apply(_ entries: [Entry]) {
        for entry in entries { replicas.apply(entry, runEffects: false) }
    }

    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) throws {
        try replicas.importStates(instances)
    }

    func followed(restored: Bool) {
        report()
    }

    private func report() {
        guard let replica = replicas.replica(at: address), replica.lastSeq > lastReported,
            let state = try? replica.stateJSON(), let digest = try? replica.digest()
        else { return }
        lastReported = replica.lastSeq
        continuation?.yield(StateWatcher.Update(seq: replica.lastSeq, state: state, digest: digest))
    }
}
