import CoreMetrics
import Synchronization

/// A counter that many threads bump without locks, exported through swift-metrics.
final class CounterCell: Sendable {
    private let value = Atomic<Int>(0)
    private let metric: CoreMetrics.Counter

    /// - Parameters:
    ///   - label: The metric's name, `flowkit_…_total`.
    ///   - dimensions: Its labels.
    init(_ label: String, dimensions: [(String, String)] = []) {
        metric = CoreMetrics.Counter(label: label, dimensions: dimensions)
    }

    func add(_ amount: Int) {
        value.add(amount, ordering: .relaxed)
        metric.increment(by: Int64(amount))
    }

    var load: Int { value.load(ordering: .relaxed) }
}

/// What a coordinator or node counts: shown in status, exported as Prometheus metrics (through
/// swift-metrics, once the process bootstraps a metrics backend; until then the metrics are
/// no-ops and only the in-process counts remain).
final class ClusterCounters: Sendable {
    let ordered = CounterCell("flowkit_entries_ordered_total")
    let applied = CounterCell("flowkit_entries_applied_total")
    let duplicates = CounterCell("flowkit_submissions_duplicate_total")
    let acksDropped = CounterCell("flowkit_acks_dropped_total")
    let publishDropped = CounterCell("flowkit_publish_dropped_total")
    /// Replies and publications a replicated coordinator dropped because its lease was about to run out.
    let fencedDrops = CounterCell("flowkit_fenced_messages_total")
    let divergences = CounterCell("flowkit_divergences_total")
    let commits = CounterCell("flowkit_log_commits_total")
    let commitMicros = CounterCell("flowkit_log_commit_microseconds_total")
    let effectsStarted = CounterCell("flowkit_effects_started_total")
    let effectFailures = CounterCell("flowkit_effect_failures_total")
    let effectsLost = CounterCell("flowkit_effects_lost_total")
    /// Instances whose effects the coordinator moved off a node that went down (takeover entries).
    let takeovers = CounterCell("flowkit_takeovers_total")
    /// A node's effects' submissions the coordinator refused because their instance was taken over.
    let staleSubmissions = CounterCell("flowkit_stale_submissions_total")
    let gapsRepaired = CounterCell("flowkit_gap_repairs_total")
    let logLossesSeen = CounterCell("flowkit_coordinator_log_losses_total")
    /// Nodes found stalled (alive, behind the head, applying nothing), once per stall.
    let stalls = CounterCell("flowkit_node_stalls_total")
    /// Log entries too large for any message, served as quarantined stand-ins.
    let quarantined = CounterCell("flowkit_entries_quarantined_total")
    /// Messages refused at the door, by reason.
    private let rejected: [ProtocolError.Code: CounterCell]
    /// Submissions refused (overloaded, log unavailable), by reason.
    private let refused: [ProtocolError.Code: CounterCell]
    private let commitLatency = CoreMetrics.Timer(label: "flowkit_log_commit_seconds")
    let gauges = ClusterGauges()

    init() {
        rejected = Dictionary(uniqueKeysWithValues: ProtocolError.Code.allCases.map {
            ($0, CounterCell("flowkit_rejected_total", dimensions: [("reason", $0.metricLabel)]))
        })
        refused = Dictionary(uniqueKeysWithValues: ProtocolError.Code.allCases.map {
            ($0, CounterCell("flowkit_refused_total", dimensions: [("reason", $0.metricLabel)]))
        })
    }

    func count(rejected code: ProtocolError.Code) { rejected[code]!.add(1) }
    func count(refused code: ProtocolError.Code, by amount: Int = 1) { refused[code]!.add(amount) }

    func recordCommit(entries: Int, duration: Duration) {
        commits.add(1)
        commitMicros.add(Int(duration.microseconds))
        commitLatency.recordNanoseconds(duration.microseconds * 1_000)
    }

    /// Rejections so far, by reason label, only the non-zero ones.
    var rejections: [String: Int] {
        var result: [String: Int] = [:]
        for (code, cell) in rejected where cell.load > 0 { result[code.metricLabel] = cell.load }
        return result
    }

    var refusals: [String: Int] {
        var result: [String: Int] = [:]
        for (code, cell) in refused where cell.load > 0 { result[code.metricLabel] = cell.load }
        return result
    }

    var totalRejected: Int { rejected.values.reduce(0) { $0 + $1.load } }
}

/// Levels, set on every tick or status interval: lag, queue depths, running effects.
final class ClusterGauges: Sendable {
    let head = Gauge(label: "flowkit_head_seq")
    let applied = Gauge(label: "flowkit_applied_seq")
    let lag = Gauge(label: "flowkit_lag_entries")
    let runningEffects = Gauge(label: "flowkit_effects_running")
    let pendingSubmissions = Gauge(label: "flowkit_pending_submissions")
    let pendingCommit = Gauge(label: "flowkit_pending_commit_entries")
    let instances = Gauge(label: "flowkit_instances")
    let nodesAlive = Gauge(label: "flowkit_nodes_alive")
    let nodesStalled = Gauge(label: "flowkit_nodes_stalled")
    /// Replicated coordinators, on the leader: how many are in sync, and its durable log end (the
    /// commit point is ``head``).
    let inSync = Gauge(label: "flowkit_replication_in_sync")
    let written = Gauge(label: "flowkit_replication_written_seq")
}
