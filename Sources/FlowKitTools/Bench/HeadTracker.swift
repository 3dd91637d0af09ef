@_spi(Wire) import FlowKitCluster
import Logging
import Synchronization
import ZeroMQ

/// Follows the coordinator's heartbeats (every 100 ms, topic `$hb`) for the head of its log, and
/// counts the divergence alarms it publishes. It subscribes to no entry, so it costs nothing under load.
final class HeadTracker: Sendable {
    private final class State: Sendable {
        let head = Atomic<UInt64>(0)
        let divergences = Atomic<Int>(0)
        let alarms = Mutex<[String]>([])
    }

    private let monitor: ClusterMonitor
    private let reader: Task<Void, Never>
    private let state = State()

    init(publishEndpoints: [String], transport: TransportOptions, serverKey: CurveKey?, logger: Logger) async throws {
        let monitor = try await ClusterMonitor(
            publishEndpoints: publishEndpoints,
            topics: [ControlTopic.heartbeat],
            transport: transport,
            serverPublicKey: serverKey,
            logger: logger
        )
        self.monitor = monitor
        let state = self.state
        let events = monitor.events
        reader = Task {
            do {
                for try await event in events {
                    switch event {
                    case .heartbeat(let heartbeat):
                        state.head.store(heartbeat.head, ordering: .relaxed)
                    case .alarm(let alarm):
                        if alarm.kind == .divergence { state.divergences.add(1, ordering: .relaxed) }
                        state.alarms.withLock { if $0.count < 20 { $0.append("\(alarm.kind.rawValue): \(alarm.message)") } }
                    default:
                        break
                    }
                }
            } catch {}
        }
    }

    /// The head of the log at the last heartbeat (0 before the first).
    var head: UInt64 { state.head.load(ordering: .relaxed) }

    /// Divergence alarms published since the bench started.
    var divergences: Int { state.divergences.load(ordering: .relaxed) }

    var alarmDescriptions: [String] { state.alarms.withLock { $0 } }

    func close() async {
        reader.cancel()
        await monitor.close()
    }
}
