import CoreFoundation
import Foundation
import Glibc

/// The schedule of one step: event `i` is due at `start + i / rate`, goes out on connection
/// `i mod connections`, to instance `(i / connections) mod instances`, with request id
/// `firstRequest + i`. A population (``population(firstRequest:configuration:startMicros:prefix:rate:)``)
/// sends one event to each instance instead, `i` to instance `i`.
///
/// The intended send time is a function of `i` alone, so a sender that falls behind cannot hide
/// it: latency is always measured from when the event should have left (coordinated omission).
/// Consecutive events go to the same instance from different connections (and so different
/// nodes), so every instance is submitted to concurrently from several origins.
struct LoadPlan: Sendable {
    var firstRequest: UInt64
    var count: Int
    var rate: Double
    /// Intended send time of event 0, microseconds since the Unix epoch.
    var startMicros: UInt64
    /// The measured window, by intended send time (and by arrival time for throughput).
    var windowStart: UInt64
    var windowEnd: UInt64
    var connections: Int
    var instances: Int
    /// Consecutive events that go to one instance: the connections (each instance hears from
    /// several origins at once), or 1 in a population.
    var eventsPerInstance: Int
    /// The step's instance addresses: `load/<prefix>-<k>`.
    var addresses: [String]

    init(firstRequest: UInt64, configuration: BenchConfiguration, startMicros: UInt64, prefix: String) {
        self.firstRequest = firstRequest
        count = configuration.totalEvents
        rate = configuration.rate
        self.startMicros = startMicros
        windowStart = startMicros + UInt64(configuration.warmup * 1e6)
        windowEnd = windowStart + UInt64(configuration.duration * 1e6)
        connections = configuration.connections
        instances = configuration.instances
        eventsPerInstance = configuration.connections
        addresses = (0..<configuration.instances).map { "load/\(prefix)-\($0)" }
    }

    /// One event to each of the step's instances at `rate`, before the step: every instance holds
    /// state when the step begins. No warm-up; its window is the whole population.
    static func population(firstRequest: UInt64, configuration: BenchConfiguration, startMicros: UInt64, prefix: String, rate: Double) -> LoadPlan {
        var plan = LoadPlan(firstRequest: firstRequest, configuration: configuration, startMicros: startMicros, prefix: prefix)
        plan.count = configuration.instances
        plan.rate = rate
        plan.eventsPerInstance = 1
        plan.windowStart = startMicros
        plan.windowEnd = startMicros + UInt64(Double(plan.count) / rate * 1e6)
        return plan
    }

    /// When event `index` should be sent.
    @inline(__always)
    func intended(_ index: Int) -> UInt64 {
        startMicros + UInt64(Double(index) * 1e6 / rate)
    }

    @inline(__always)
    func instance(_ index: Int) -> Int { (index / eventsPerInstance) % instances }

    @inline(__always)
    func connection(_ index: Int) -> Int { index % connections }

    /// The event index of a request id, if it belongs to this plan.
    @inline(__always)
    func index(ofRequest request: UInt64) -> Int? {
        guard request >= firstRequest, request < firstRequest + UInt64(count) else { return nil }
        return Int(request - firstRequest)
    }

    var windowSeconds: Double { Double(windowEnd - windowStart) / 1e6 }
}

/// The wall clock in microseconds since the Unix epoch: the unit every PROGRESS carries, so the
/// bench's timestamps and the nodes' compare directly (all processes share one machine's clock).
enum BenchClock {
    @inline(__always)
    static func wallMicros() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
    }
}
