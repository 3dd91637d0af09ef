import ArgumentParser
import FlowKitCommands
import Foundation

/// `flowkit bench plot`: draws a sweep's latency percentiles against offered load as an SVG.
struct BenchPlotCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plot",
        abstract: "Draw applied-on-all-nodes latency (p50, p90, p99, p99.9) against offered load from 'flowkit bench --json' output, as an SVG.",
        discussion: """
            flowkit bench --sweep 5000,10000,20000,50000,100000 --json > sweep.json
            flowkit bench plot sweep.json --out latency.svg

            Takes a sweep (an array of results), a search ({"steps": […]}) or a single result.
            """
    )

    @Argument(help: "The JSON that 'flowkit bench --json' printed.")
    var results: String

    @Option(help: "Where to write the SVG.")
    var out = "latency.svg"

    @Option(help: "The plot's title.")
    var title: String?

    func run() throws {
        guard let data = FileManager.default.contents(atPath: results) else {
            throw ValidationError("cannot read \(results): write it with 'flowkit bench --sweep 1000,5000,10000 --json > \(results)'")
        }
        let points: [LatencyPlot.Point]
        do {
            points = try LatencyPlot.points(fromJSON: data)
        } catch {
            throw ValidationError("\(results) is not 'flowkit bench --json' output: \(EventDescription.describe(error))")
        }
        guard !points.isEmpty else { throw ValidationError("\(results) holds no results") }
        var plot = LatencyPlot(points: points)
        if let title { plot.title = title }
        do {
            try plot.svg().write(toFile: out, atomically: true, encoding: .utf8)
        } catch {
            printError("error: cannot write \(out): \(error.localizedDescription)")
            throw ExitCode.failure
        }
        printFlushed("wrote \(out): \(points.count) rates, p50/p90/p99/p99.9 of submit → applied on all nodes")
    }
}

/// A decoding error in a sentence.
enum EventDescription {
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing \"\(key.stringValue)\"" + path(context)
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return context.debugDescription + path(context)
        @unknown default:
            return "\(error)"
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
        return keys.isEmpty ? "" : " at \(keys)"
    }
}
