import FlowKitCore
import Logging
import ZeroMQ

/// A read-only subscriber to a coordinator's publish socket: ordered entries, heartbeats, cluster
/// status and alarms, as a stream of events.
///
/// ```swift
/// let monitor = try await ClusterMonitor(publishEndpoint: endpoints.publish, topics: ["counter/"], logger: logger)
/// for try await event in monitor.events {
///     if case .entries(let entries) = event { print(entries.map(\.seq)) }
/// }
/// ```
///
/// A monitor never slows the cluster: the publisher drops what a slow monitor's queue cannot hold,
/// and the monitor notices from the seqs (``Event/fellBehind(expected:got:)``).
public final class ClusterMonitor: Sendable {
    public enum Event: Sendable {
        case entries([Entry])
        case heartbeat(Heartbeat)
        case status(ClusterStatus)
        case alarm(Alarm)
        /// Entries were dropped before they reached this monitor (it read too slowly, or joined
        /// late): the next entry had seq `got` where `expected` was due. Only reported when the
        /// monitor subscribes to every entry.
        case fellBehind(expected: UInt64, got: UInt64)
    }

    /// The coordinator's heartbeat: its term and the head of its log.
    public struct Heartbeat: Sendable, Equatable {
        public var epoch: UInt32
        public var head: UInt64
        /// Microseconds since the Unix epoch, the coordinator's clock.
        public var time: UInt64
    }

    private let context: ZMQContext
    private let loop: IOLoop
    private let socket: AsyncSocket
    private let seesEveryEntry: Bool

    /// Subscribes to the publish socket.
    ///
    /// - Parameters:
    ///   - publishEndpoint: The coordinator's publish endpoint.
    ///   - topics: Address prefixes to receive entries for (`counter/`, `counter/room-1`); empty
    ///     for every entry. Heartbeats, status and alarms always come.
    ///   - receiveHighWaterMark: How many messages may queue for this monitor before the publisher
    ///     drops the rest: what bounds its memory when it reads slowly.
    ///   - transport: Socket options, CURVE included.
    ///   - serverPublicKey: The coordinator's CURVE public key, when CURVE is on.
    ///   - logger: Where the monitor's I/O loop logs.
    public convenience init(
        publishEndpoint: String,
        topics: [String] = [],
        receiveHighWaterMark: Int32 = 10_000,
        transport: TransportOptions = TransportOptions(),
        serverPublicKey: CurveKey? = nil,
        logger: Logger
    ) async throws {
        try await self.init(
            publishEndpoints: [publishEndpoint], topics: topics, receiveHighWaterMark: receiveHighWaterMark, transport: transport,
            serverPublicKey: serverPublicKey, logger: logger
        )
    }

    /// Subscribes to several coordinators' publish sockets: replicated coordinators, of which only
    /// the leader publishes. Entries a new leader publishes again are passed on once.
    public init(
        publishEndpoints: [String],
        topics: [String] = [],
        receiveHighWaterMark: Int32 = 10_000,
        transport: TransportOptions = TransportOptions(),
        serverPublicKey: CurveKey? = nil,
        logger: Logger
    ) async throws {
        context = try ZMQContext()
        loop = try IOLoop(context: context, name: "monitor-io", logger: logger)
        seesEveryEntry = topics.isEmpty
        let subscriptions = (topics.isEmpty ? [EntriesMessage.batchTopic] : topics)
            + [ControlTopic.heartbeat, ControlTopic.status, ControlTopic.alarm]
        socket = try await transport.openClient(
            .sub, on: loop, configuration: AsyncSocket.Configuration(receiveBufferCapacity: 1_024),
            connecting: publishEndpoints, serverKey: serverPublicKey
        ) { socket in
            try socket.setOption(.receiveHighWaterMark, receiveHighWaterMark)
            for topic in subscriptions { try socket.subscribe(topic) }
        }
    }

    /// The events, until ``close()``. Malformed messages are skipped.
    public var events: AsyncThrowingStream<Event, any Error> {
        let socket = self.socket
        let seesEveryEntry = self.seesEveryEntry
        return AsyncThrowingStream { continuation in
            let task = Task {
                var expected: UInt64?
                do {
                    while true {
                        for message in try await socket.receiveBatch(max: 256) {
                            let parts = message.parts
                            guard parts.count >= 2, let type = try? WireHeader.read(parts[1], expecting: .entries, .heartbeat, .clusterStatus, .alarm).0 else {
                                continue
                            }
                            switch type {
                            case .entries:
                                guard var entries = try? EntriesMessage(frames: parts).entries else { continue }
                                if seesEveryEntry, let due = expected {
                                    // Seen already, from an earlier leader.
                                    entries.removeAll { $0.seq < due }
                                }
                                if seesEveryEntry, let first = entries.first {
                                    if let due = expected, first.seq > due {
                                        continuation.yield(.fellBehind(expected: due, got: first.seq))
                                    }
                                    expected = entries.last!.seq + 1
                                }
                                if !entries.isEmpty { continuation.yield(.entries(entries)) }
                            case .heartbeat:
                                guard let heartbeat = try? HeartbeatMessage(frames: parts) else { continue }
                                continuation.yield(.heartbeat(Heartbeat(epoch: heartbeat.epoch, head: heartbeat.head, time: heartbeat.time)))
                            case .clusterStatus:
                                guard let status = try? ClusterStatusMessage(frames: parts).status else { continue }
                                continuation.yield(.status(status))
                            default:
                                guard let alarm = try? AlarmMessage(frames: parts).alarm else { continue }
                                continuation.yield(.alarm(alarm))
                            }
                        }
                    }
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    public func close() async {
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
