import ArgumentParser
@_spi(Wire) import FlowKitCluster

/// `--trace-dir` and `--trace-every`: when sampled entries pass each hop of a process, for
/// `flowkit bench --trace` (docs/PERFORMANCE.md). Off unless `--trace-dir` is given.
package struct TraceOptions: ParsableArguments {
    package init() {}

    @Option(help: "Append when sampled entries pass each hop here to <dir>/<process name>.jsonl (diagnostics; off by default).")
    package var traceDir: String?

    @Option(help: "With --trace-dir: sample the entries whose seq is a multiple of this.")
    package var traceEvery: UInt64 = 50

    package func validate() throws {
        guard traceEvery >= 1 else { throw ValidationError("--trace-every must be at least 1") }
    }

    /// The trace for the process named `name`, or `nil` when tracing is off.
    package func trace(name: String) -> HopTrace? {
        traceDir.map { HopTrace(every: traceEvery, path: "\($0)/\(name).jsonl") }
    }
}
