/// One second of a running `flowkit bench`, as the bench reports it to a dashboard
/// (`POST /api/bench`) and the dashboard passes it on to its pages: a line of the same JSON
/// schema as the monitor's (`"type": "bench"`, docs/DASHBOARD.md).
///
/// Latencies are in microseconds, measured from each event's intended send time. Every second
/// of a step carries that second's percentiles; the step's last line (`phase` `done`) carries
/// the whole measured window's, and whether the end check passed.
package struct BenchLive: Codable, Sendable, Equatable {
    package enum Phase: String, Codable, Sendable {
        case warmUp = "warm-up"
        case measuring
        /// The load has stopped; the bench waits for the last answers and checks convergence.
        case checking
        case done
    }

    package struct Percentiles: Codable, Sendable, Equatable {
        package var count: UInt64
        package var p50: UInt64
        package var p90: UInt64
        package var p99: UInt64
        package var p999: UInt64
        package var max: UInt64

        package init(count: UInt64, p50: UInt64, p90: UInt64, p99: UInt64, p999: UInt64, max: UInt64) {
            self.count = count
            self.p50 = p50
            self.p90 = p90
            self.p99 = p99
            self.p999 = p999
            self.max = max
        }
    }

    package var type = "bench"
    /// The bench run's tag; a new run starts the page's charts over.
    package var run: String
    /// The step of a sweep or a search, from 1.
    package var step: Int
    package var phase: Phase
    /// Seconds since the step's load started.
    package var elapsed: Double
    /// The step's offered rate, events per second.
    package var rate: Double
    /// Events due, sent and acknowledged (ordered) so far in the step.
    package var offered: Int
    package var sent: Int
    package var acknowledged: Int
    /// Events ordered, and applied on every node, in the last second (the window's rate when done).
    package var orderedPerSecond: Int
    package var appliedPerSecond: Int
    /// The largest `head − applied` over the nodes.
    package var lag: UInt64
    /// To ordered (acknowledged by the coordinator) and to applied on every node.
    package var ordered: Percentiles
    package var applied: Percentiles
    /// In the `done` line: whether the step's end check passed.
    package var passed: Bool?

    package init(
        run: String, step: Int, phase: Phase, elapsed: Double, rate: Double, offered: Int, sent: Int, acknowledged: Int,
        orderedPerSecond: Int, appliedPerSecond: Int, lag: UInt64, ordered: Percentiles, applied: Percentiles, passed: Bool? = nil
    ) {
        self.run = run
        self.step = step
        self.phase = phase
        self.elapsed = elapsed
        self.rate = rate
        self.offered = offered
        self.sent = sent
        self.acknowledged = acknowledged
        self.orderedPerSecond = orderedPerSecond
        self.appliedPerSecond = appliedPerSecond
        self.lag = lag
        self.ordered = ordered
        self.applied = applied
        self.passed = passed
    }

    /// Why a line a client sent cannot be shown, if it cannot.
    package var problem: String? {
        if type != "bench" { return "type must be \"bench\", not \"\(type)\"" }
        if run.isEmpty || run.utf8.count > 64 { return "run must be 1 to 64 bytes" }
        if step < 1 { return "step counts from 1" }
        if !elapsed.isFinite || elapsed < 0 { return "elapsed must be a finite number of seconds, not negative" }
        if !rate.isFinite || rate <= 0 { return "rate must be a positive number of events per second" }
        if offered < 0 || sent < 0 || acknowledged < 0 || orderedPerSecond < 0 || appliedPerSecond < 0 { return "counts cannot be negative" }
        return nil
    }
}
