@_spi(Wire) import FlowKitCluster
import FlowKitCommands
import Logging
import ZeroMQ

/// The bench's sockets: `connections` DEALERs that carry EMITs, round-robin over the nodes; the
/// first one to each node also carries the WATCH for its PROGRESS reports (a node with no EMIT
/// connection, when there are fewer connections than nodes, gets a DEALER for the WATCH alone).
/// A node applying a batch then answers its emits and reports its progress on that connection in
/// one write, and the bench reads them in one.
///
/// All of them live on one ``IOLoop`` (one thread) in one context, and their replies are handled on
/// that thread, between polls (`Task(executorPreference:)`): no thread hop between a reply's arrival
/// and its timestamp, and two threads in all for the load, where a ``ClusterClient`` per connection
/// would bring a context, an I/O loop and two tasks per request each — on a 2-core machine the
/// bench's own overhead must stay small next to the cluster's.
final class LoadConnections: Sendable {
    struct NodeEndpoint: Sendable {
        var name: String
        var endpoint: String
        var serverKey: CurveKey?
    }

    let context: ZMQContext
    let loop: IOLoop
    /// The EMIT sockets, connection `c` to node `c mod nodes`.
    let emitters: [AsyncSocket]
    /// The socket carrying each node's WATCH: its first EMIT socket, or one of its own.
    let watchers: [AsyncSocket]
    /// Sockets that carry only a WATCH, closed with the rest.
    private let watchOnly: [AsyncSocket]
    private let readers: [Task<Void, Never>]
    private let watchRequest: UInt64 = 1 << 62

    init(nodes: [NodeEndpoint], connections: Int, transport: TransportOptions, recorder: LatencyRecorder, logger: Logger) async throws {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "bench-io", logger: logger)
        self.context = context
        self.loop = loop
        // Deep queues: an open-loop sender must not be slowed by the socket layer before the
        // cluster pushes back.
        let configuration = AsyncSocket.Configuration(
            receiveBufferCapacity: 65_536,
            receiveBatchLimit: 1_024,
            sendQueueCapacity: 65_536,
            sendBatchLimit: 1_024
        )
        func open(_ node: NodeEndpoint) async throws -> AsyncSocket {
            let curve = transport.curve
            let (socket, _) = try await loop.open(.dealer, engine: transport.engine(for: [node.endpoint]), configuration: configuration) { socket in
                try socket.setOption(.sendHighWaterMark, transport.highWaterMark)
                try socket.setOption(.receiveHighWaterMark, transport.highWaterMark)
                try socket.setOption(.linger, .zero)
                try socket.setOption(.maxMessageSize, transport.maxMessageBytes)
                if let curve, let serverKey = node.serverKey, let socket = socket as? Socket {
                    try socket.configureCurveClient(ZeroMQ.CurveClientOptions(keyPair: curve.keyPair, serverPublicKey: serverKey))
                }
                try socket.connect(node.endpoint)
            }
            return socket
        }
        var emitters: [AsyncSocket] = []
        for index in 0..<connections { emitters.append(try await open(nodes[index % nodes.count])) }
        var watchOnly: [AsyncSocket] = []
        for node in nodes.dropFirst(connections) { watchOnly.append(try await open(node)) }
        let watchers = Array(emitters.prefix(nodes.count)) + watchOnly
        self.emitters = emitters
        self.watchers = watchers
        self.watchOnly = watchOnly

        var readers: [Task<Void, Never>] = []
        for socket in emitters + watchOnly {
            // The node whose PROGRESS this socket carries, if it carries a WATCH.
            let node = watchers.firstIndex { $0 === socket }
            readers.append(Task(executorPreference: loop) {
                while let batch = try? await socket.receiveBatch() {
                    let arrival = BenchClock.wallMicros()
                    var replies: [ClientReply] = []
                    replies.reserveCapacity(batch.count)
                    for message in batch {
                        guard let reply = try? ClientReply(frames: message.frames.map(\.bytes)) else { continue }
                        if case .progress(_, let applied, let time) = reply {
                            if let node { recorder.record(node: node, applied: applied, time: time) }
                        } else {
                            replies.append(reply)
                        }
                    }
                    if !replies.isEmpty { recorder.record(replies: replies, arrival: arrival) }
                }
            })
        }
        self.readers = readers
    }

    /// Asks every node for PROGRESS reports for the next `seconds` (at most an hour); asking again
    /// extends it. The request id is the same each time, so a node never keeps two watches.
    func watch(seconds: UInt32) async throws {
        for socket in watchers {
            let request = ClientRequest.watch(request: watchRequest, seconds: min(seconds, 3_600))
            try await socket.send(Message(parts: request.frames))
        }
    }

    /// Emits still queued in the bench, not yet handed to the engine.
    var queuedOutgoing: Int { emitters.reduce(0) { $0 + $1.statistics.queuedOutgoing } }

    func close() async {
        for socket in emitters + watchOnly { await socket.close(linger: .zero) }
        for reader in readers { await reader.value }
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
