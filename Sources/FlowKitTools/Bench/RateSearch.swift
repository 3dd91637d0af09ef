import Foundation

/// The search for the highest sustainable rate, as a value type: given each step's verdict it says
/// which rate to try next.
///
/// It doubles the rate until a step is not sustained (or halves it while the first ones are not),
/// then bisects between the highest sustained and the lowest unsustained rate until they are within
/// `precision` of each other or `maxSteps` steps have run.
struct RateSearch: Sendable {
    /// What a step must achieve to count as sustained.
    struct Criteria: Sendable {
        /// Ordered and applied throughput at least this share of the offered rate.
        var minimumShare = 0.95
        /// Applied-on-all-nodes p99 at most this (µs): a rate whose tail a user would not accept
        /// is not sustained, whatever its throughput. 10 ms by default (`--search-p99-limit`).
        var maxP99Micros: UInt64 = 10_000
        /// Refusals at most this share of the events sent.
        var maxRefusedShare = 0.01

        var description: String {
            "ordered and every node's applied ≥ \(Int(minimumShare * 100))% of offered; applied lag at the window's end ≤ 0.25 s of load; "
                + "applied p99 ≤ \(BenchFormat.micros(maxP99Micros)); refused ≤ \(Int(maxRefusedShare * 100))%; every event sent on time; end check passed"
        }

        /// Why `result` does not count as sustained (empty: it does).
        func reasons(_ result: BenchResult) -> [String] {
            var reasons: [String] = []
            let offered = result.throughput.offered
            if result.throughput.ordered < minimumShare * offered {
                reasons.append("ordered \(BenchFormat.rate(result.throughput.ordered))/s < \(Int(minimumShare * 100))% of offered")
            }
            // With effects each event brings a second entry: compare applied with what was ordered.
            let entries = max(result.throughput.orderedEntries, result.throughput.ordered)
            for (node, applied) in result.throughput.applied.sorted(by: { $0.key < $1.key }) where applied < minimumShare * min(entries, offered * (result.config.effects ? 2 : 1)) {
                reasons.append("\(node) applied \(BenchFormat.rate(applied))/s, behind the \(BenchFormat.rate(entries)) entries/s ordered")
            }
            if Double(result.throughput.lagAtWindowEnd) > 0.25 * offered * (result.config.effects ? 2 : 1) {
                reasons.append("applied lag \(BenchFormat.count(Int(result.throughput.lagAtWindowEnd))) entries at the window's end")
            }
            if result.latency.applied.p99 > maxP99Micros {
                reasons.append("applied p99 \(BenchFormat.micros(result.latency.applied.p99)) > \(BenchFormat.micros(maxP99Micros))")
            }
            if Double(result.counts.refused) > maxRefusedShare * Double(max(1, result.counts.sent)) {
                reasons.append("\(BenchFormat.count(result.counts.refused)) emits refused")
            }
            if result.counts.sent < result.counts.offered {
                reasons.append("the bench could send only \(BenchFormat.count(result.counts.sent)) of \(BenchFormat.count(result.counts.offered)) events")
            }
            if !result.passed { reasons.append("end check failed") }
            return reasons
        }
    }

    private(set) var highestSustained: Double?
    private(set) var lowestUnsustained: Double?
    private(set) var steps = 0
    let start: Double
    let precision: Double
    let maxSteps: Int
    let minimumRate: Double = 100

    init(start: Double, precision: Double = 0.05, maxSteps: Int = 12) {
        self.start = start
        self.precision = precision
        self.maxSteps = maxSteps
    }

    /// The rate to try first.
    var first: Double { start }

    /// Takes a step's verdict and returns the next rate to try, or `nil` when the search is done.
    mutating func record(rate: Double, sustained: Bool) -> Double? {
        steps += 1
        if sustained {
            highestSustained = max(highestSustained ?? 0, rate)
        } else {
            lowestUnsustained = min(lowestUnsustained ?? .infinity, rate)
        }
        guard steps < maxSteps else { return nil }
        switch (highestSustained, lowestUnsustained) {
        case (let good?, nil):
            return good * 2
        case (nil, let bad?):
            let next = (bad / 2).rounded()
            return next >= minimumRate ? next : nil
        case (let good?, let bad?):
            guard (bad - good) / good > precision else { return nil }
            let middle = Self.round((good + bad) / 2, within: bad - good)
            return middle > good && middle < bad ? middle : nil
        case (nil, nil):
            return nil
        }
    }

    /// `rate` rounded to a tenth of the order of magnitude of `gap`, so steps read well
    /// (187,500 between 150,000 and 225,000 → 190,000) and still fall between the bounds.
    static func round(_ rate: Double, within gap: Double) -> Double {
        let unit = Swift.max(1, pow(10, (log10(Swift.max(gap, 1))).rounded(.down) - 1))
        return (rate / unit).rounded() * unit
    }
}
