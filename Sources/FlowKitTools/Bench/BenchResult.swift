import FlowKitCommands
import Histogram

/// The result of one bench step (one offered rate): what `--json` prints, field names stable.
///
/// Latencies are microseconds; rates are per second over the measured window; memory is bytes.
struct BenchResult: Codable, Sendable {
    var config: BenchConfiguration
    var machine: MachineInfo
    var throughput: Throughput
    var latency: Latencies
    var baseline: BaselineResult?
    var ratios: Ratios?
    var resources: [String: ProcessResources]
    var memory: [String: MemoryTrend]
    var counts: Counts
    var converged: Bool
    var lost: Int
    var duplicated: Int
    /// Effects that never reported back (with `--effects`): each event's effect must run exactly
    /// once in the cluster.
    var effectsMissing: Int
    /// The end check passed: converged, nothing lost or duplicated, every effect ran.
    var passed: Bool
    /// Why the end check failed, when it did.
    var problems: [String]
    /// With `--search`: whether this step counted as sustained, and why not.
    var sustained: Bool?
    var notSustainedBecause: [String]?
    /// With `--trace`: where the sampled events' time went, hop by hop.
    var hops: HopBreakdown?
    /// With `--populate`: the population before the step and the idle cluster after it.
    var population: Population?

    /// Every instance given its state before the step (`flowkit bench --populate`).
    struct Population: Codable, Sendable {
        var instances: Int
        var acknowledged: Int
        /// From the population's first event until every node had applied it all.
        var seconds: Double
        /// With `--settle`: seconds from then until every cluster process was quiet
        /// (``BenchPopulation/settleRule``); nil when not asked or never quiet.
        var settledSeconds: Double? = nil
        /// Each process's resident memory (VmRSS) before the population and once every node
        /// holds it, and the growth divided by the instances.
        var rssBeforeBytes: [String: UInt64]
        var rssAfterBytes: [String: UInt64]
        var bytesPerInstance: [String: Double]
        /// The same at the end of the idle time, once idle instances went to rest (when watched).
        var rssIdleBytes: [String: UInt64]?
        var bytesPerInstanceIdle: [String: Double]?
        /// What each process's allocator held for it before the population and at the end of the
        /// idle time (`flowkit_malloc_allocated_bytes`), and the growth divided by the instances:
        /// the live data, without the pages freed but not yet given back that an RSS counts.
        var allocatedBeforeBytes: [String: UInt64]? = nil
        var allocatedIdleBytes: [String: UInt64]? = nil
        var allocatedPerInstanceIdle: [String: Double]? = nil
        /// How long the idle cluster was watched, and each process's CPU meanwhile (percent of a core).
        var idleSeconds: Double
        var idleCPUPercent: [String: Double]
        /// A node started afresh after the idle time (the bench's own cluster only): seconds from
        /// its start until it had applied the head, through the coordinator's snapshot.
        var joinSeconds: Double?
    }

    struct Throughput: Codable, Sendable {
        /// The rate asked for.
        var offered: Double
        /// Events handed to the sockets per second (below `offered` when the bench fell behind).
        var sent: Double
        /// Acknowledged emits (EMITTED) per second.
        var ordered: Double
        /// Entries the coordinator ordered per second (the log head's growth; with `--effects` it
        /// includes the effects' events).
        var orderedEntries: Double
        /// Entries each node applied per second.
        var applied: [String: Double]
        /// The largest `head − applied` over the nodes when the window ended, in entries.
        var lagAtWindowEnd: UInt64
    }

    struct Latencies: Codable, Sendable {
        /// Intended send time → EMITTED arrives at the bench.
        var ordered: LatencySummary
        /// Intended send time → the last node has applied the entry.
        var applied: LatencySummary
    }

    struct Ratios: Codable, Sendable {
        /// Ordered events/s ÷ raw pub/sub messages/s.
        var orderedToPubSub: Double
        /// The slowest node's applied entries/s ÷ raw pub/sub messages/s.
        var appliedToPubSub: Double
        /// Applied-on-all-nodes p50 ÷ raw round-trip p50.
        var appliedP50ToRTT: Double
        /// Applied-on-all-nodes p99 ÷ raw round-trip p99.
        var appliedP99ToRTT: Double
        /// Ordered p50 ÷ raw round-trip p50.
        var orderedP50ToRTT: Double
    }

    struct Counts: Codable, Sendable {
        /// Events the schedule called for (warm-up included).
        var offered: Int
        var sent: Int
        var acknowledged: Int
        /// Refused by the node (overloaded, coordinator unavailable…): never ordered.
        var refused: Int
        /// Sent but never answered: their outcome is unknown.
        var unanswered: Int
        /// Refusals by reason.
        var errors: [String: Int]
        /// Events the latency histograms hold (those of the measured window).
        var measured: Int
        /// Divergence alarms the coordinator published during the step.
        var alarms: Int
    }
}

/// Percentiles of one latency histogram, in microseconds.
struct LatencySummary: Codable, Sendable {
    var count: UInt64
    var p50: UInt64
    var p90: UInt64
    var p99: UInt64
    var p999: UInt64
    var max: UInt64
    var mean: Double

    init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        let empty = histogram.totalCount == 0
        p50 = empty ? 0 : histogram.valueAtPercentile(50)
        p90 = empty ? 0 : histogram.valueAtPercentile(90)
        p99 = empty ? 0 : histogram.valueAtPercentile(99)
        p999 = empty ? 0 : histogram.valueAtPercentile(99.9)
        max = empty ? 0 : histogram.max
        mean = empty ? 0 : (histogram.mean * 10).rounded() / 10
    }

    /// As a dashboard's bench line carries it.
    var live: BenchLive.Percentiles {
        BenchLive.Percentiles(count: count, p50: p50, p90: p90, p99: p99, p999: p999, max: max)
    }
}

/// CPU and peak memory of one process over a step.
struct ProcessResources: Codable, Sendable {
    var pid: Int32
    /// User + system CPU seconds spent during the measured window.
    var cpuSeconds: Double
    /// `cpuSeconds` as a share of one core over the window, in percent.
    var cpuPercent: Double
    /// VmHWM: the most resident memory the process ever had.
    var peakRSSBytes: UInt64
    /// Context switches of all its threads in the window, per entry ordered: a thread that slept and
    /// was woken (voluntary), or was preempted.
    var switchesPerEvent: Double?
    var threads: Int?
}

/// A node's resident memory sampled every second during a step: flat, or growing?
struct MemoryTrend: Codable, Sendable {
    var firstBytes: UInt64
    var lastBytes: UInt64
    var maxBytes: UInt64
    /// One sample per second, from the start of the warm-up.
    var samples: [UInt64]
}

/// The raw ZeroMQ figures of this machine, taken in the same run: the yardstick for the cluster's.
struct BaselineResult: Codable, Sendable {
    /// 64-byte PUB → SUB messages per second between this process and a child.
    var pubsubMsgsPerSecond: Double
    var pubsubMessages: Int
    var messageBytes: Int
    /// REQ/REP round trips to an echoing child.
    var rttMicros: RoundTrip
    /// How it was measured.
    var method: String

    struct RoundTrip: Codable, Sendable {
        var p50: Double
        var p99: Double
        var count: Int
    }
}

/// What `--search` found: the highest rate that held, and every step tried.
struct SearchResult: Codable, Sendable {
    var maxSustainedRate: Double
    var criteria: String
    var steps: [BenchResult]
}
