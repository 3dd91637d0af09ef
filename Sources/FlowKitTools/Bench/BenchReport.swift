/// The human-readable tables `flowkit bench` prints at the end.
enum BenchReport {
    /// One step's table.
    static func render(_ result: BenchResult) -> String {
        let config = result.config
        var lines: [String] = []
        let source = config.attach.map { "attached to \($0)" } ?? "durable log \(config.durability)"
        lines.append(
            "flowkit bench: \(BenchFormat.rate(config.rate)) events/s for \(BenchFormat.fixed(config.duration, 0)) s (warm-up \(BenchFormat.fixed(config.warmup, 0)) s), "
                + "\(config.nodes) nodes, \(source), \(config.connections) connections, \(BenchFormat.count(config.instances)) instances, "
                + "\(config.eventSize) B events (\(config.codec)\(config.effects ? ", with effects" : ""))"
        )
        lines.append("machine: \(result.machine.summary)")
        lines.append("")
        let throughput = result.throughput
        lines.append("throughput (per second)  offered \(BenchFormat.rate(throughput.offered))  sent \(BenchFormat.rate(throughput.sent))  ordered \(BenchFormat.rate(throughput.ordered))  entries \(BenchFormat.rate(throughput.orderedEntries))")
        lines.append(
            "  applied                " + throughput.applied.sorted { $0.key < $1.key }.map { "  \($0.key) \(BenchFormat.rate($0.value))" }.joined()
                + "   (lag at end \(BenchFormat.count(Int(throughput.lagAtWindowEnd))))"
        )
        lines.append("")
        lines.append(BenchFormat.left("latency", 26) + ["p50", "p90", "p99", "p99.9", "max", "count"].map { BenchFormat.right($0, 10) }.joined())
        for (name, summary) in [("submit → ordered", result.latency.ordered), ("submit → applied on all", result.latency.applied)] {
            let cells = [summary.p50, summary.p90, summary.p99, summary.p999, summary.max].map { BenchFormat.right(BenchFormat.micros($0), 10) }
            lines.append("  " + BenchFormat.left(name, 24) + cells.joined() + BenchFormat.right(BenchFormat.count(Int(summary.count)), 10))
        }
        lines.append("  (from each event's intended send time: coordinated omission corrected)")
        if let hops = result.hops {
            lines.append("")
            lines.append(hops.text)
        }
        if let baseline = result.baseline, let ratios = result.ratios {
            lines.append("")
            lines.append(
                "raw ZeroMQ baseline      pub/sub \(baseline.messageBytes) B \(BenchFormat.rate(baseline.pubsubMsgsPerSecond)) msg/s; "
                    + "round trip p50 \(BenchFormat.fixed(baseline.rttMicros.p50, 1)) µs, p99 \(BenchFormat.fixed(baseline.rttMicros.p99, 1)) µs"
            )
            lines.append(
                "  ratios                 ordered/pub-sub \(percent(ratios.orderedToPubSub)), slowest applied/pub-sub \(percent(ratios.appliedToPubSub)); "
                    + "applied p50 = \(BenchFormat.fixed(ratios.appliedP50ToRTT, 1))× RTT p50, p99 = \(BenchFormat.fixed(ratios.appliedP99ToRTT, 1))× RTT p99"
            )
        }
        lines.append("")
        lines.append(
            BenchFormat.left("resources (window)", 26) + BenchFormat.right("cpu s", 10) + BenchFormat.right("cpu %", 10) + BenchFormat.right("peak RSS", 12)
                + BenchFormat.right("threads", 9) + BenchFormat.right("switches/event", 16)
        )
        for name in orderedNames(result.resources.keys) {
            guard let resources = result.resources[name] else { continue }
            lines.append(
                "  " + BenchFormat.left(name, 24) + BenchFormat.right(BenchFormat.fixed(resources.cpuSeconds, 2), 10)
                    + BenchFormat.right(BenchFormat.fixed(resources.cpuPercent, 1), 10) + BenchFormat.right(BenchFormat.bytes(resources.peakRSSBytes), 12)
                    + BenchFormat.right(resources.threads.map(String.init) ?? "", 9)
                    + BenchFormat.right(resources.switchesPerEvent.map { BenchFormat.fixed($0, 2) } ?? "", 16)
            )
        }
        if !result.memory.isEmpty {
            lines.append(BenchFormat.left("node RSS (every second)", 26) + ["first", "last", "max"].map { BenchFormat.right($0, 12) }.joined())
            for name in orderedNames(result.memory.keys) {
                guard let trend = result.memory[name] else { continue }
                lines.append("  " + BenchFormat.left(name, 24) + [trend.firstBytes, trend.lastBytes, trend.maxBytes].map { BenchFormat.right(BenchFormat.bytes($0), 12) }.joined())
            }
        }
        if let population = result.population {
            lines.append(
                "population: \(BenchFormat.count(population.instances)) instances given state in \(BenchFormat.fixed(population.seconds, 1)) s; "
                    + (population.settledSeconds.map { "settled \(BenchFormat.fixed($0, 0)) s later; " } ?? "")
                    + "then idle for \(BenchFormat.fixed(population.idleSeconds, 0)) s"
                    + (population.joinSeconds.map { "; a fresh node joined behind them in \(BenchFormat.fixed($0, 2)) s" } ?? "")
            )
            let idle = population.rssIdleBytes != nil
            let allocated = population.allocatedIdleBytes != nil
            let columns = ["RSS before", "RSS after", "B/instance"] + (idle ? ["RSS idle", "B/instance"] : [])
                + (allocated ? ["malloc idle", "B/instance"] : []) + ["idle cpu %"]
            lines.append(BenchFormat.left("  process", 26) + columns.map { BenchFormat.right($0, 12) }.joined())
            for name in orderedNames(population.rssAfterBytes.keys) {
                let perInstance = { (figures: [String: Double]?) in figures?[name].map { BenchFormat.fixed($0, 0) } ?? "" }
                let cells =
                    [population.rssBeforeBytes[name].map(BenchFormat.bytes) ?? "", population.rssAfterBytes[name].map(BenchFormat.bytes) ?? "", perInstance(population.bytesPerInstance)]
                    + (idle ? [population.rssIdleBytes?[name].map(BenchFormat.bytes) ?? "", perInstance(population.bytesPerInstanceIdle)] : [])
                    + (allocated ? [population.allocatedIdleBytes?[name].map(BenchFormat.bytes) ?? "", perInstance(population.allocatedPerInstanceIdle)] : [])
                    + [population.idleCPUPercent[name].map { BenchFormat.fixed($0, 1) } ?? ""]
                lines.append("  " + BenchFormat.left(name, 24) + cells.map { BenchFormat.right($0, 12) }.joined())
            }
        }
        lines.append("")
        let counts = result.counts
        lines.append(
            "check: \(result.passed ? "PASSED" : "FAILED")  converged \(result.converged)  lost \(result.lost)  duplicated \(result.duplicated)"
                + (config.effects ? "  effects missing \(result.effectsMissing)" : "")
                + "  (sent \(BenchFormat.count(counts.sent)), acknowledged \(BenchFormat.count(counts.acknowledged)), refused \(BenchFormat.count(counts.refused)), unanswered \(BenchFormat.count(counts.unanswered)))"
        )
        for problem in result.problems { lines.append("  problem: \(problem)") }
        if !counts.errors.isEmpty {
            lines.append("  errors: " + counts.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if let sustained = result.sustained {
            lines.append(sustained ? "sustained: yes" : "sustained: no (\((result.notSustainedBecause ?? []).joined(separator: "; ")))")
        }
        return lines.joined(separator: "\n")
    }

    /// A sweep's or a search's summary: one row per step.
    static func summary(_ results: [BenchResult], title: String) -> String {
        var lines = [title, ""]
        let header = ["offered/s", "ordered/s", "min applied/s", "ordered p99", "applied p50", "p90", "p99", "p99.9", "max", "check"]
        lines.append(header.map { BenchFormat.right($0, 14) }.joined())
        for result in results {
            let applied = result.latency.applied
            var cells = [
                BenchFormat.rate(result.throughput.offered), BenchFormat.rate(result.throughput.ordered),
                BenchFormat.rate(result.throughput.applied.values.min() ?? 0), BenchFormat.micros(result.latency.ordered.p99),
            ]
            cells += [applied.p50, applied.p90, applied.p99, applied.p999, applied.max].map { BenchFormat.micros($0) }
            cells.append(result.passed ? (result.sustained == false ? "not sustained" : "ok") : "FAILED")
            lines.append(cells.map { BenchFormat.right($0, 14) }.joined())
        }
        return lines.joined(separator: "\n")
    }

    private static func percent(_ ratio: Double) -> String { BenchFormat.fixed(ratio * 100, 2) + "%" }

    /// coordinator (or c1…cN), node-1…node-N (numerically), bench.
    private static func orderedNames(_ names: some Sequence<String>) -> [String] {
        names.sorted { lhs, rhs in
            func rank(_ name: String) -> (Int, Int) {
                if name == "coordinator" { return (0, 0) }
                if name.hasPrefix("c"), let number = Int(name.dropFirst()) { return (0, number) }
                if name.hasPrefix("node-"), let number = Int(name.dropFirst(5)) { return (1, number) }
                return (2, 0)
            }
            return rank(lhs) < rank(rhs)
        }
    }
}
