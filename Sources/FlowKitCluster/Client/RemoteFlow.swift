import FlowKitCore
import Foundation
import Logging
import ZeroMQ

/// One replicated instance, held by a program that is not a node: a typed, observable flow.
///
/// Get one from ``ClusterClient/flow(_:_:as:coordinator:coordinatorPublicKey:)``. It is a `StatefulFlowProviding` actor like a
/// local flow: ``state`` is the instance's replicated state, subscribers are called after every
/// entry of the instance, in seq order and without gaps, and ``emit(_:)`` sends an event through
/// the client's node and returns once this handle has applied it.
///
/// ```swift
/// let client = try await ClusterClient(endpoint: "tcp://127.0.0.1:7410", logger: logger)
/// let room = try await client.flow(CounterFlow.self, "room-1")
/// await room.subscribe { state in print("count", state.count) }
/// try await room.emit(.increment, wait: .applied)
/// ```
///
/// It replays the instance itself, from the ordered log, as every replica does (PROTOCOL.md,
/// section 7): it starts from the node's answer to QUERY (the instance's state at the node's
/// applied seq), follows the coordinator's `#` batches from there, applies the entries of its own
/// instance with the flow's reducer and repairs gaps with range requests. It runs no effects: they
/// run on the node whose submission ordered the event.
///
/// It follows `#`, every entry of the cluster, rather than an address topic: an address topic
/// carries only its instance's entries, so a dropped run cannot be told from a quiet instance,
/// while `#` numbers every entry. Only headers of other instances' entries are read.
public actor RemoteFlow<F: ReplicatedFlow>: StatefulFlowProviding, LogFollowing where F.State: Hashable & Sendable, F.Event: Sendable {
    public typealias State = F.State
    public typealias Event = F.Event

    /// The instance's address, `flow/key`.
    public nonisolated let address: String
    /// The instance's state, as of the last entry this handle applied.
    public var state: F.State { replica.state }
    /// Called with the instance's state after every entry of it, in seq order.
    public var stateSubscribers: [((F.State) -> Void)] = []
    /// The seq of the instance's last entry this handle applied (0: none yet).
    public var lastSeq: UInt64 { replica.lastSeq }
    /// The cluster seq this handle has followed the log to.
    public var applied: UInt64 { follower.applied }
    /// The error of the last ``emit(_:)`` that failed, which cannot throw: use
    /// ``emit(_:wait:)`` to handle errors where they happen.
    public private(set) var lastEmitError: (any Error)?

    private let client: ClusterClient
    private let registration: TypedFlowRegistration<F>
    private let replica: TypedReplica<F>
    private let subscriber: AsyncSocket
    let syncSocket: AsyncSocket
    private let logger: Logger
    var follower: LogFollower
    /// Emits waiting for this handle to apply their seq, in no particular order.
    private var waiters: [(seq: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var tasks: [Task<Void, Never>] = []
    private var isClosed = false

    init(
        client: ClusterClient,
        registration: TypedFlowRegistration<F>,
        address: Address,
        start: ClusterClient.State?,
        startApplied: UInt64,
        subscriber: AsyncSocket,
        sync: AsyncSocket,
        logger: Logger
    ) throws {
        self.client = client
        self.registration = registration
        self.address = address.description
        self.replica = TypedReplica(registration: registration, address: address, context: .passive(logger: logger))
        self.subscriber = subscriber
        self.syncSocket = sync
        self.logger = logger
        if let start {
            try replica.restore(stateJSON: start.json, lastSeq: start.lastSeq, ownership: .init(), decoder: JSONDecoder())
        }
        follower = LogFollower(
            applied: start?.applied ?? startApplied, versions: ReadableVersions(flow: registration.name, reads: registration.oldestReadable...registration.version)
        )
    }

    /// Starts reading the sockets. Separate from `init`, which cannot hand `self` to tasks.
    func startFollowing() {
        let subscriber = self.subscriber
        let sync = self.syncSocket
        // The tasks hold the handle weakly: a handle nobody holds stops following.
        tasks = [
            Task { [weak self] in
                while let batch = try? await subscriber.receiveBatch() {
                    guard let self else { return }
                    await self.followPublished(batch)
                }
            },
            Task { [weak self] in
                while let batch = try? await sync.receiveBatch() {
                    guard let self else { return }
                    await self.followSync(batch)
                }
            },
            Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    guard let self else { return }
                    await self.tickFollower()
                }
            },
        ]
    }

    deinit {
        for task in tasks { task.cancel() }
        let subscriber = self.subscriber
        let sync = self.syncSocket
        Task {
            await subscriber.close(linger: .zero)
            await sync.close(linger: .zero)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: ClusterClientError.closed) }
    }

    /// Stops following the instance; emits still waiting fail with ``ClusterClientError/closed``.
    /// The client stays open.
    public func close() async {
        guard !isClosed else { return }
        isClosed = true
        for task in tasks { task.cancel() }
        await subscriber.close(linger: .zero)
        await syncSocket.close(linger: .zero)
        for task in tasks { await task.value }
        tasks = []
        failWaiters(ClusterClientError.closed)
    }

    // MARK: Emitting

    /// Emits an event through the client's node and waits until this handle has applied it, so
    /// ``state`` includes it. A failure is logged and kept in ``lastEmitError``; use
    /// ``emit(_:wait:)`` to handle it where it happens.
    public func emit(_ event: F.Event) async {
        do {
            try await emit(event, wait: .applied)
        } catch {
            lastEmitError = error
            logger.error("emit failed", metadata: ["flowkit.address": "\(address)", "flowkit.error": "\(error)"])
        }
    }

    /// Emits an event through the client's node.
    ///
    /// - Parameters:
    ///   - event: The event.
    ///   - wait: `.ordered` returns once the coordinator ordered it; `.applied` once the node and
    ///     this handle have both applied it, so ``state`` includes it.
    /// - Returns: Where the event landed in the order.
    /// - Throws: ``ProtocolError`` with the node's reason, or ``ClusterClientError`` (the node did
    ///   not answer within the client's timeout, or this handle could not apply the entry in it).
    @discardableResult
    public func emit(_ event: F.Event, wait: WaitMode) async throws -> ClusterClient.Ordered {
        guard !isClosed else { throw ClusterClientError.closed }
        let payload = try JSONEncoder().encode(event)
        let ordered = try await client.emit(payload: Array(payload), codec: .json, to: address, wait: wait)
        if wait == .applied { try await waitUntilApplied(ordered.seq) }
        return ordered
    }

    /// Cancels the instance's effects cluster-wide: those marked with `id`, or all of them.
    @discardableResult
    public func cancel(id: String?, wait: WaitMode = .ordered) async throws -> ClusterClient.Ordered {
        try await client.cancel(at: address, id: id, wait: wait)
    }

    /// Returns once this handle has followed the log to `seq`.
    ///
    /// - Throws: ``ClusterClientError`` with ``ClusterClientError/Code/timedOut`` after the client's
    ///   timeout; ``ProtocolError`` `versionUnreadable` when the log holds an entry of the flow
    ///   written by a version this build does not read, before `seq`.
    public func waitUntilApplied(_ seq: UInt64) async throws {
        guard follower.applied < seq else { return }
        guard !isClosed else { throw ClusterClientError.closed }
        if let unreadable = follower.unreadable { throw Self.error(unreadable) }
        let timeout = client.timeout
        let overdue = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.timeOutWaiters(upTo: seq, after: timeout)
        }
        defer { overdue.cancel() }
        try await withCheckedThrowingContinuation { continuation in
            waiters.append((seq, continuation))
        }
    }

    private func timeOutWaiters(upTo seq: UInt64, after timeout: Duration) {
        resumeWaiters { $0 <= seq && $0 > follower.applied ? ClusterClientError.timedOut(timeout) : nil }
    }

    /// What a waiter behind an entry this build cannot read learns.
    private static func error(_ unreadable: UnreadableEntry) -> ProtocolError {
        ProtocolError(.versionUnreadable, "this handle stopped following the log: \(unreadable)")
    }

    private func failWaiters(_ error: any Error) {
        resumeWaiters { _ in error }
    }

    /// Resumes the waiters for which `outcome` gives an error, with it.
    private func resumeWaiters(_ outcome: (UInt64) -> (any Error)?) {
        var kept: [(seq: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
        for waiter in waiters {
            if let error = outcome(waiter.seq) { waiter.continuation.resume(throwing: error) } else { kept.append(waiter) }
        }
        waiters = kept
    }

    // MARK: Following

    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) {
        // The range this handle needed was compacted away: take the instance from the snapshot,
        // then go on. Changes between are lost to subscribers, not to the state.
        guard let mine = instances.last(where: { $0.address == address }) else { return }
        do {
            // A state an older version wrote reads through the flow's migrations (the follower
            // restores no snapshot with one this build cannot read).
            let state = try registration.migrateState(mine.state, from: mine.stateVersion)
            try replica.restore(stateJSON: state, lastSeq: mine.lastSeq, ownership: mine.ownership, decoder: JSONDecoder())
            notifySubscribers()
        } catch {
            logger.error("the snapshot's state does not decode", metadata: ["flowkit.address": "\(address)", "flowkit.error": "\(error)"])
        }
    }

    func followed(restored: Bool) {
        if let unreadable = follower.unreadable { failWaiters(Self.error(unreadable)) }
        let applied = follower.applied
        if waiters.contains(where: { $0.seq <= applied }) {
            let ready = waiters.filter { $0.seq <= applied }
            waiters.removeAll { $0.seq <= applied }
            for waiter in ready { waiter.continuation.resume() }
        }
    }

    func apply(_ entries: [Entry]) {
        for entry in entries where entry.address == address && entry.kind != .quarantined {
            do {
                try replica.apply(entry, runEffects: false)
            } catch {
                // Every replica skips an entry that does not decode, and so does this one.
                logger.warning("skipped an entry that does not decode", metadata: ["flowkit.seq": "\(entry.seq)", "flowkit.error": "\(error)"])
                continue
            }
            if entry.kind == .event { notifySubscribers() }
        }
    }

    private func notifySubscribers() {
        guard !stateSubscribers.isEmpty else { return }
        let state = replica.state
        for subscriber in stateSubscribers { subscriber(state) }
    }
}
