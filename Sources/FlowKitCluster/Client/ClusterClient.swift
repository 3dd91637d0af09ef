import FlowKitCore
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// Talks to one node's client socket: emit events, query states, cancel effects, read status.
///
/// ```swift
/// let client = try await ClusterClient(endpoint: "tcp://127.0.0.1:7410", logger: logger)
/// let ordered = try await client.emit(json: #"{"increment":{}}"#, to: "counter/room-1", wait: .applied)
/// let state = try await client.query("counter/room-1")
/// print(ordered.seq, String(decoding: state.state, as: UTF8.self))
/// ```
///
/// Many requests may be in flight at once from many tasks; each answer finds its request by id.
public final class ClusterClient: Sendable {
    /// An emit or cancel the cluster ordered.
    public struct Ordered: Sendable, Equatable, Codable {
        /// Its position in the log (0 when the coordinator no longer remembers a duplicate's seq).
        public var seq: UInt64
        public var epoch: UInt32
        /// Whether the node had applied it when it answered.
        public var applied: Bool
    }

    /// An instance's state on the node asked.
    public struct State: Sendable, Equatable {
        /// The node's applied seq when it answered.
        public var applied: UInt64
        /// The seq of the last entry applied to the instance.
        public var lastSeq: UInt64
        public var digest: StateDigest
        /// The state as JSON.
        public var json: [UInt8]
    }

    private let context: ZMQContext?
    let loop: IOLoop
    let transport: TransportOptions
    let logger: Logger
    private let socket: AsyncSocket
    private let waiters = ReplyWaiters()
    private let nextRequest = Atomic<UInt64>(1)
    /// The wire protocol the node speaks: this process's newest until the node refuses it in an
    /// older one it speaks (docs/VERSIONING.md, "Upgrading the wire protocol").
    private let nodeProtocol = SpokenProtocol()
    private let receiver: Task<Void, Never>
    /// Fails requests whose answer is overdue: one task for all of them, not one per request.
    private let sweeper: Task<Void, Never>
    /// How long a request waits for its answer.
    public let timeout: Duration

    /// Connects to a node's client endpoint.
    ///
    /// - Parameters:
    ///   - endpoint: The node's client endpoint, such as `tcp://127.0.0.1:7410`.
    ///   - timeout: How long each request waits for its answer.
    ///   - transport: Socket options, CURVE included.
    ///   - serverPublicKey: The node's CURVE public key, when CURVE is on.
    ///   - logger: Where the client's I/O loop logs.
    public init(
        endpoint: String,
        timeout: Duration = .seconds(10),
        transport: TransportOptions = TransportOptions(),
        serverPublicKey: CurveKey? = nil,
        logger: Logger
    ) async throws {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "client-io", logger: logger)
        let socket = try await transport.openClient(.dealer, on: loop, connecting: [endpoint], serverKey: serverPublicKey)
        self.context = context
        self.loop = loop
        self.transport = transport
        self.logger = logger
        self.socket = socket
        self.timeout = timeout
        let waiters = self.waiters
        let nodeProtocol = self.nodeProtocol
        receiver = Task {
            while let batch = try? await socket.receiveBatch() {
                for message in batch {
                    if let refusal = try? ErrorReply(frames: message.parts),
                        let older = refusal.olderProtocol(than: nodeProtocol.version)
                    {
                        nodeProtocol.version = older
                    }
                    guard let reply = try? ClientReply(frames: message.parts) else { continue }
                    if case .progress(let request, let applied, let time) = reply {
                        waiters.progress(request)?.yield(Progress(applied: applied, time: time))
                    } else {
                        waiters.take(reply.request)?.resume(returning: reply)
                    }
                }
            }
            for orphan in waiters.takeAll() { orphan.resume(throwing: ClusterClientError.closed) }
            waiters.finishProgress()
        }
        let timeoutForErrors = timeout
        sweeper = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                for overdue in waiters.takeOverdue(now: ContinuousClock.now) {
                    overdue.resume(throwing: ClusterClientError.timedOut(timeoutForErrors))
                }
            }
        }
    }

    /// Closes the connection; requests still waiting fail.
    public func close() async {
        sweeper.cancel()
        await socket.close(linger: .zero)
        await receiver.value
        await loop.shutdown(linger: .zero)
        await context?.terminate()
    }

    /// Emits an event given as JSON.
    ///
    /// - Parameters:
    ///   - json: The event, as its `Codable` JSON: `{"increment":{}}`, `{"add":{"_0":5}}`.
    ///   - address: `flow/key`.
    ///   - wait: Answer once ordered, or once also applied by this node.
    /// - Returns: Where the event landed in the order.
    /// - Throws: ``ProtocolError`` with the node's reason (unknown flow, undecodable event,
    ///   overloaded, coordinator unavailable), or ``ClusterClientError``.
    public func emit(json: String, to address: String, wait: WaitMode = .ordered) async throws -> Ordered {
        try await emit(payload: Array(json.utf8), codec: .json, to: address, wait: wait)
    }

    /// Emits an event payload in the given codec.
    public func emit(payload: [UInt8], codec: PayloadCodec, to address: String, wait: WaitMode = .ordered) async throws -> Ordered {
        let id = nextID()
        return try ordered(await request(.emit(request: id, wait: wait, codec: codec, address: address, payload: payload), id: id))
    }

    /// Cancels effects of an instance cluster-wide: those marked with `id`, or all of them.
    public func cancel(at address: String, id: String?, wait: WaitMode = .ordered) async throws -> Ordered {
        let requestID = nextID()
        return try ordered(await request(.cancel(request: requestID, wait: wait, address: address, id: id), id: requestID))
    }

    /// Reads an instance's state, once the node has applied at least `minApplied`.
    public func query(_ address: String, minApplied: UInt64 = 0) async throws -> State {
        let id = nextID()
        switch try await request(.query(request: id, minApplied: minApplied, address: address), id: id) {
        case .state(_, let applied, let lastSeq, let digest, let state):
            return State(applied: applied, lastSeq: lastSeq, digest: StateDigest(bytes: digest), json: state)
        case let other:
            throw ClusterClientError.unexpectedReply("\(other)")
        }
    }

    /// The node's progress, as it applies entries.
    public struct Progress: Sendable, Equatable {
        /// The node's applied seq.
        public var applied: UInt64
        /// When it got there: microseconds since the Unix epoch, the node's clock.
        public var time: UInt64
    }

    /// A PROGRESS after every batch the node applies, for `duration` (at most an hour).
    public func watchProgress(for duration: Duration) async throws -> AsyncStream<Progress> {
        let id = nextID()
        let (stream, continuation) = AsyncStream.makeStream(of: Progress.self, bufferingPolicy: .bufferingNewest(4_096))
        waiters.addProgress(id, continuation)
        let seconds = UInt32(min(3_600, max(1, duration.components.seconds)))
        try await socket.send(Message(parts: try WireDialect.translate(ClientRequest.watch(request: id, seconds: seconds).frames, to: nodeProtocol.version)))
        return stream
    }

    /// The node's status.
    public func status() async throws -> NodeStatus {
        let id = nextID()
        switch try await request(.status(request: id), id: id) {
        case .status(_, let json):
            return try JSONDecoder().decode(NodeStatus.self, from: Data(json))
        case let other:
            throw ClusterClientError.unexpectedReply("\(other)")
        }
    }

    /// A typed handle on one replicated instance, `name/key`: an actor flow whose state follows the
    /// cluster's, and whose events go through this client's node. See ``RemoteFlow``.
    ///
    /// - Parameters:
    ///   - type: The flow type, as the cluster registers it.
    ///   - key: The instance key.
    ///   - name: The name the cluster registers the flow under; by default its `flowName`.
    ///   - coordinator: Where to follow the log; by default where the node says it reaches the
    ///     coordinator (its STATUS).
    ///   - coordinatorPublicKey: The coordinator's CURVE public key, when CURVE is on.
    /// - Throws: ``ProtocolError`` when the node runs no flow of that name, or the instance's state
    ///   does not decode as `F.State`; ``ClusterClientError`` when the node does not answer.
    public func flow<F: ReplicatedFlow>(
        _ type: F.Type,
        _ key: String,
        as name: String = F.flowName,
        coordinator: CoordinatorEndpoints? = nil,
        coordinatorPublicKey: CurveKey? = nil
    ) async throws -> RemoteFlow<F> where F.State: Hashable & Sendable, F.Event: Sendable {
        let address = try Address(flow: name, key: key)
        let status = try await status()
        guard status.flows.contains(name) else {
            throw ProtocolError(
                .unknownFlow,
                "the node runs no flow named \"\(name)\" (it runs: \(status.flows.joined(separator: ", "))); pass the name it is registered under with as:"
            )
        }
        guard let endpoints = coordinator ?? status.coordinator else {
            throw ClusterClientError.unexpectedReply("the node's STATUS names no coordinator endpoints; pass coordinator:")
        }
        let (subscriber, sync) = try await loop.openFollowerSockets(to: endpoints, transport: transport, serverKey: coordinatorPublicKey)
        do {
            // Subscribed first: what is published from here on is kept, and the follower repairs
            // anything between the state's seq and the first entry that arrives.
            let start: State?
            do {
                start = try await query(address.description, minApplied: status.applied)
            } catch let error as ProtocolError where error.code == .notFound {
                start = nil  // no event yet: the initial state, at least as of status.applied
            }
            let readable = try F.migrations.readableVersions(upTo: F.version)
            let registration = TypedFlowRegistration<F>(
                name: name,
                codecs: EventCodecs<F.Event>(wire: .json),
                version: UInt16(clamping: F.version),
                oldestReadable: UInt16(clamping: readable.lowerBound),
                migrations: F.migrations,
                initialState: { _ in F.initialState },
                makeFlow: { F() },
                resume: F.resume
            )
            let handle = try RemoteFlow<F>(
                client: self,
                registration: registration,
                address: address,
                start: start,
                startApplied: status.applied,
                subscriber: subscriber,
                sync: sync,
                logger: logger
            )
            await handle.startFollowing()
            return handle
        } catch {
            await subscriber.close(linger: .zero)
            await sync.close(linger: .zero)
            throw error
        }
    }

    private func nextID() -> UInt64 {
        nextRequest.add(1, ordering: .relaxed).oldValue
    }

    private func ordered(_ reply: ClientReply) throws -> Ordered {
        guard case .emitted(_, let seq, let epoch, let applied) = reply else {
            throw ClusterClientError.unexpectedReply("\(reply)")
        }
        return Ordered(seq: seq, epoch: epoch, applied: applied)
    }

    private func request(_ request: ClientRequest, id: UInt64) async throws -> ClientReply {
        let spoken = nodeProtocol.version
        do {
            return try await self.request(Message(parts: try WireDialect.translate(request.frames, to: spoken)), id: id)
        } catch let error as ProtocolError where error.code == .unsupportedVersion && nodeProtocol.version < spoken {
            // The node speaks an older protocol, which its refusal was in: once more, in that one
            // (the refused request was not read, so nothing is done twice).
            return try await self.request(Message(parts: try WireDialect.translate(request.frames, to: nodeProtocol.version)), id: id)
        }
    }

    private func request(_ message: Message, id: UInt64) async throws -> ClientReply {
        let socket = self.socket
        let waiters = self.waiters
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let reply: ClientReply = try await withCheckedThrowingContinuation { continuation in
            waiters.add(id, continuation, deadline: deadline)
            // The common case queues the message at once; only a full queue needs a task to wait.
            do {
                if try socket.trySend(message) { return }
            } catch {
                waiters.take(id)?.resume(throwing: error)
                return
            }
            Task {
                do {
                    try await socket.send(message)
                } catch {
                    waiters.take(id)?.resume(throwing: error)
                }
            }
        }
        if case .error(_, let error) = reply { throw error }
        return reply
    }
}
