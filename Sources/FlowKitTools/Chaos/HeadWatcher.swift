@_spi(Wire) import FlowKitCluster
import Logging
import Synchronization

/// Follows the coordinator's heartbeats (the head seq and term) and collects its alarms, through
/// a ``ClusterMonitor`` that subscribes to control topics only.
final class HeadWatcher: Sendable {
    struct Beat: Sendable {
        var epoch: UInt32
        var head: UInt64
        var received: ContinuousClock.Instant
    }

    private let monitor: ClusterMonitor
    private let latest = Mutex<Beat?>(nil)
    private let alarmLog = Mutex<[Alarm]>([])
    private let lastStatus = Mutex<ClusterStatus?>(nil)
    /// Per coordinator term, the most instances taken over and stale submissions refused it reported.
    private let effectCounts = Mutex<[UInt32: (takeovers: Int, stale: Int)]>([:])
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(publishEndpoint: String, logger: Logger) async throws {
        monitor = try await ClusterMonitor(publishEndpoint: publishEndpoint, topics: [ControlTopic.heartbeat], logger: logger)
        let events = monitor.events
        let follower = Task { [self] in
            do {
                for try await event in events {
                    switch event {
                    case .heartbeat(let beat):
                        latest.withLock { $0 = Beat(epoch: beat.epoch, head: beat.head, received: .now) }
                    case .alarm(let alarm):
                        alarmLog.withLock { $0.append(alarm) }
                    case .status(let status):
                        lastStatus.withLock { $0 = status }
                        effectCounts.withLock { counts in
                            let known = counts[status.epoch] ?? (0, 0)
                            counts[status.epoch] = (max(known.takeovers, status.takeovers ?? 0), max(known.stale, status.staleSubmissions ?? 0))
                        }
                    default:
                        break
                    }
                }
            } catch {}
        }
        task.withLock { $0 = follower }
    }

    var beat: Beat? { latest.withLock { $0 } }
    var alarms: [Alarm] { alarmLog.withLock { $0 } }
    /// Instances whose effects were taken over, and effects' submissions refused as stale, over
    /// every coordinator term seen (a coordinator counts from its term's start).
    var effects: (takeovers: Int, staleSubmissions: Int) {
        effectCounts.withLock { counts in
            (counts.values.reduce(0) { $0 + $1.takeovers }, counts.values.reduce(0) { $0 + $1.stale })
        }
    }

    /// The latest cluster status the coordinator published.
    var status: ClusterStatus? { lastStatus.withLock { $0 } }

    /// The head of the first heartbeat received after `instant` (and, if given, in a term other
    /// than `notEpoch`), or `nil` if none comes within `timeout`.
    func head(after instant: ContinuousClock.Instant, notEpoch: UInt32? = nil, timeout: Duration) async -> Beat? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let beat, beat.received > instant, beat.epoch != notEpoch { return beat }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    func close() async {
        task.withLock { $0 }?.cancel()
        await monitor.close()
    }
}
