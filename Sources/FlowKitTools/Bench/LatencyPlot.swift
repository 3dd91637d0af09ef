import Foundation

/// Draws applied-on-all-nodes latency percentiles against offered load as a self-contained SVG:
/// a log-scale latency axis, an offered-load axis (log-scale when the rates span a decade or more),
/// a legend, and a title with the machine and the run.
struct LatencyPlot {
    /// One step, as read from `flowkit bench --json` output (only the fields the plot needs).
    struct Point: Decodable {
        struct Config: Decodable {
            var rate: Double
            var nodes: Int?
            var durability: String?
            var eventSize: Int?
            var codec: String?
            var effects: Bool?
            var attach: String?
        }
        struct Machine: Decodable {
            var cpus: Int?
            var cpuModel: String?
            var kernel: String?
            var startedAt: String?
        }
        struct Percentiles: Decodable {
            var p50: Double
            var p90: Double
            var p99: Double
            var p999: Double
        }
        struct Latency: Decodable {
            var applied: Percentiles
        }
        var config: Config
        var machine: Machine?
        var latency: Latency
    }

    /// The tool's output: a sweep (an array), a search (`{"steps": […]}`) or one result.
    static func points(fromJSON data: Data) throws -> [Point] {
        struct Steps: Decodable { var steps: [Point] }
        let decoder = JSONDecoder()
        if let array = try? decoder.decode([Point].self, from: data) { return array }
        if let search = try? decoder.decode(Steps.self, from: data) { return search.steps }
        return [try decoder.decode(Point.self, from: data)]
    }

    var points: [Point]
    var title = "FlowKit: submit → applied on all nodes, latency vs offered load"

    static var series: [(name: String, color: String, value: KeyPath<Point.Percentiles, Double>)] {
        [("p50", "#1f77b4", \.p50), ("p90", "#2ca02c", \.p90), ("p99", "#ff7f0e", \.p99), ("p99.9", "#d62728", \.p999)]
    }

    func svg() -> String {
        let sorted = points.sorted { $0.config.rate < $1.config.rate }
        let (width, height) = (960.0, 580.0)
        let (left, right, top, bottom) = (90.0, 150.0, 80.0, 70.0)
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let rates = sorted.map(\.config.rate)
        let latencies = sorted.flatMap { point in Self.series.map { max(1, point.latency.applied[keyPath: $0.value]) } }
        let x = Axis(values: rates.isEmpty ? [1, 10] : rates, logarithmic: (rates.max() ?? 1) / max(1, rates.min() ?? 1) >= 10, length: plotWidth)
        let y = Axis(values: latencies.isEmpty ? [10, 1_000] : latencies, logarithmic: true, length: plotHeight)

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="28" font-size="17" font-weight="bold">\(Self.escape(title))</text>
            <text x="\(left)" y="50" fill="#444">\(Self.escape(subtitle))</text>

            """
        // Grid, ticks and labels.
        for tick in y.ticks {
            let position = top + plotHeight - y.position(tick.value)
            svg += "<line x1=\"\(left)\" y1=\"\(f(position))\" x2=\"\(left + plotWidth)\" y2=\"\(f(position))\" stroke=\"\(tick.major ? "#ccc" : "#eee")\"/>\n"
            if tick.major || y.ticks.filter(\.major).count < 3 {
                svg += "<text x=\"\(left - 8)\" y=\"\(f(position + 4))\" text-anchor=\"end\">\(Self.escape(Self.latencyLabel(tick.value)))</text>\n"
            }
        }
        for tick in x.ticks {
            let position = left + x.position(tick.value)
            svg += "<line x1=\"\(f(position))\" y1=\"\(top)\" x2=\"\(f(position))\" y2=\"\(top + plotHeight)\" stroke=\"\(tick.major ? "#ccc" : "#eee")\"/>\n"
            if tick.major || !x.logarithmic {
                svg += "<text x=\"\(f(position))\" y=\"\(top + plotHeight + 18)\" text-anchor=\"middle\">\(Self.rateLabel(tick.value))</text>\n"
            }
        }
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" fill=\"none\" stroke=\"#333\"/>\n"
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 22)\" text-anchor=\"middle\">offered load (events/s\(x.logarithmic ? ", log scale" : ""))</text>\n"
        svg += "<text transform=\"translate(24 \(top + plotHeight / 2)) rotate(-90)\" text-anchor=\"middle\">latency (log scale)</text>\n"

        // Series and legend.
        for (index, series) in Self.series.enumerated() {
            let coordinates = sorted.map { point -> (Double, Double, Double) in
                let value = max(1, point.latency.applied[keyPath: series.value])
                return (left + x.position(point.config.rate), top + plotHeight - y.position(value), value)
            }
            let path = coordinates.map { "\(f($0.0)),\(f($0.1))" }.joined(separator: " ")
            svg += "<g class=\"series\" data-series=\"\(series.name)\">\n"
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(series.color)\" stroke-width=\"2\"/>\n"
            for (point, coordinate) in zip(sorted, coordinates) {
                svg += "<circle cx=\"\(f(coordinate.0))\" cy=\"\(f(coordinate.1))\" r=\"3.5\" fill=\"\(series.color)\">"
                svg += "<title>\(series.name) at \(BenchFormat.rate(point.config.rate))/s: \(Self.escape(BenchFormat.micros(coordinate.2)))</title></circle>\n"
            }
            svg += "</g>\n"
            let legendY = top + 10 + Double(index) * 22
            svg += "<line x1=\"\(left + plotWidth + 20)\" y1=\"\(legendY)\" x2=\"\(left + plotWidth + 48)\" y2=\"\(legendY)\" stroke=\"\(series.color)\" stroke-width=\"2\"/>\n"
            svg += "<text x=\"\(left + plotWidth + 56)\" y=\"\(legendY + 4)\">\(series.name)</text>\n"
        }
        svg += "</svg>\n"
        return svg
    }

    /// The run and the machine: `3 nodes, synced log, 16 B events (binary) · AMD EPYC, 2 CPUs, …`.
    var subtitle: String {
        guard let first = points.first else { return "" }
        let config = first.config
        var run = ["\(config.nodes ?? 0) nodes", config.attach == nil ? "\(config.durability ?? "?") log" : "attached cluster"]
        run.append("\(config.eventSize ?? 0) B events (\(config.codec ?? "binary")\(config.effects == true ? ", effects" : ""))")
        let machine = first.machine.map { [$0.cpuModel, $0.cpus.map { "\($0) CPUs" }, $0.kernel, $0.startedAt].compactMap { $0 }.joined(separator: ", ") } ?? ""
        return run.joined(separator: ", ") + (machine.isEmpty ? "" : " · " + machine)
    }

    private func f(_ value: Double) -> String { BenchFormat.fixed(value, 1) }

    /// A tick label without needless decimals: `100 µs`, `2 ms`, `10 s`.
    static func latencyLabel(_ micros: Double) -> String {
        func trimmed(_ value: Double) -> String {
            value == value.rounded() ? BenchFormat.fixed(value, 0) : BenchFormat.fixed(value, 1)
        }
        switch micros {
        case ..<1_000: return trimmed(micros) + " µs"
        case ..<1_000_000: return trimmed(micros / 1_000) + " ms"
        default: return trimmed(micros / 1_000_000) + " s"
        }
    }

    static func rateLabel(_ rate: Double) -> String {
        switch rate {
        case 1_000_000...: return BenchFormat.fixed(rate / 1_000_000, rate.truncatingRemainder(dividingBy: 1_000_000) == 0 ? 0 : 1) + "M"
        case 1_000...: return BenchFormat.fixed(rate / 1_000, rate.truncatingRemainder(dividingBy: 1_000) == 0 ? 0 : 1) + "k"
        default: return BenchFormat.fixed(rate, 0)
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
