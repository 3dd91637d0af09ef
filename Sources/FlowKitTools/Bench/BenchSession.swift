import ArgumentParser
import FlowKitCommands
import Foundation
import Logging
import Synchronization

/// One `flowkit bench` invocation: the baseline, the cluster, the steps (one rate, a sweep or a
/// search), the output, and the cleanup that always runs — on success, on error and on Ctrl-C.
struct BenchSession {
    let command: BenchCommand
    let logger: Logger

    /// Runs everything; returns whether every step's end check passed.
    func run() async throws -> Bool {
        let stop = StopFlag()
        let outcome = Mutex<Result<Bool, any Error>?>(nil)
        try await ShutdownService.run(logger: logger) {
            let result: Result<Bool, any Error>
            do {
                result = .success(try await body(stop: stop))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
        } stop: {
            stop.set()
        }
        if stop.isSet {
            printError("interrupted: the load stopped and the cluster was shut down")
            throw ExitCode(130)
        }
        return try outcome.withLock { $0 }?.get() ?? false
    }

    private func body(stop: StopFlag) async throws -> Bool {
        let machine = MachineInfo.current()
        let base = command.benchConfiguration
        let baseline = command.noBaseline ? nil : try await measureBaseline()
        if stop.isSet { return false }

        let target: BenchTarget
        if let attach = command.attach {
            target = try await BenchTarget.attach(directory: attach, logger: logger)
        } else {
            let coordinators = command.coordinators == 1 ? "a coordinator" : "etcd, \(command.coordinators) replicated coordinators"
            printError("starting \(coordinators) and \(command.nodes) nodes (durability \(command.durability))…")
            target = try await BenchTarget.start(
                nodes: command.nodes, coordinators: command.coordinators, durability: command.durability, dataDirectory: command.dataDir,
                traceEvery: command.trace ? command.traceEvery : nil, restAfterMs: command.restAfterMs,
                logLevel: command.clusterLogLevel, logger: logger
            )
        }
        var configuration = base
        configuration.nodes = target.nodes.count
        let runner: BenchRunner
        var page: Task<Void, any Error>?
        do {
            try await target.waitUntilReady()
            let reporter: DashboardReporter?
            (reporter, page) = try await showDashboard(target: target)
            runner = try await BenchRunner(
                base: configuration, target: target, machine: machine, baseline: baseline, stop: stop, live: !command.quiet,
                dashboard: reporter, logger: logger
            )
        } catch {
            page?.cancel()
            let tails = await target.logTails()
            await target.shutDown()
            throw BenchError(.clusterStart, "\(error)\(tails)")
        }
        func finish() async {
            await runner.close()
            await runner.dashboard?.close()
            page?.cancel()
            await target.shutDown()
        }
        do {
            let passed = try await steps(runner: runner, stop: stop)
            await finish()
            return passed
        } catch {
            await finish()
            throw error
        }
    }

    /// Where the bench shows each second: the dashboard --dashboard names, the attached cluster's
    /// own, or one it serves (--serve-dashboard, which it stops at the end); or none.
    private func showDashboard(target: BenchTarget) async throws -> (DashboardReporter?, Task<Void, any Error>?) {
        if command.noDashboard { return (nil, nil) }
        var page: Task<Void, any Error>?
        // The token: in the URL --dashboard names, or the attached cluster's (cluster.json).
        var (url, token) = command.dashboard.map { ($0, nil) } ?? (target.file.dashboard, target.file.dashboardToken)
        if let listen = command.serveDashboard, let (host, port) = Dashboard.parse(listen: listen) {
            let served = try await Dashboard.start(for: target.file, host: host, port: port, logger: logger)
            page = served.task
            (url, token) = (served.access.baseURL, served.access.token)
            printError("dashboard: \(served.url)" + (Dashboard.warning(host: host).map { " (\($0))" } ?? ""))
        } else if let url {
            printError("live on the dashboard at \(url)")
        }
        return (url.flatMap { DashboardReporter(dashboard: $0, token: token) }, page)
    }

    private func measureBaseline() async throws -> BaselineResult {
        printError("baseline: raw ZeroMQ pub/sub (\(BenchFormat.count(command.baselineMessages)) × 64 B) and REQ/REP round trips with a child process…")
        let directory = NSTemporaryDirectory() + "flowkit-bench-baseline-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let baseline = try await BaselineRunner.run(messages: command.baselineMessages, size: 64, roundTrips: 20_000, logDirectory: directory)
        printError(
            "baseline: pub/sub \(BenchFormat.rate(baseline.pubsubMsgsPerSecond)) msg/s, round trip p50 \(BenchFormat.fixed(baseline.rttMicros.p50, 1)) µs, p99 \(BenchFormat.fixed(baseline.rttMicros.p99, 1)) µs"
        )
        return baseline
    }

    /// Runs the steps the flags ask for and prints the results.
    private func steps(runner: BenchRunner, stop: StopFlag) async throws -> Bool {
        var results: [BenchResult] = []
        func runStep(_ rate: Double) async throws -> BenchResult {
            printError("— step \(results.count + 1): \(BenchFormat.rate(rate)) events/s for \(BenchFormat.fixed(command.duration, 0)) s after a \(BenchFormat.fixed(command.warmup, 0)) s warm-up")
            return try await runner.step(rate: rate, index: results.count + 1)
        }
        func show(_ text: String) {
            if command.json { printError(text) } else { printFlushed(text) }
        }

        if command.search {
            let criteria = RateSearch.Criteria(maxP99Micros: UInt64(command.searchP99Limit * 1_000))
            var search = RateSearch(start: command.searchStart)
            var rate: Double? = search.first
            while let current = rate, !stop.isSet {
                var result = try await runStep(current)
                let reasons = criteria.reasons(result)
                result.sustained = reasons.isEmpty
                result.notSustainedBecause = reasons.isEmpty ? nil : reasons
                results.append(result)
                show(BenchReport.render(result) + "\n")
                rate = search.record(rate: current, sustained: reasons.isEmpty)
            }
            let best = search.highestSustained ?? 0
            show(BenchReport.summary(results, title: "search: highest sustained rate \(BenchFormat.rate(best)) events/s (\(criteria.description))"))
            if command.json { printFlushed(Self.encode(SearchResult(maxSustainedRate: best, criteria: criteria.description, steps: results))) }
            // A search's unsustained steps are expected; only a failed end check fails the run.
            return results.allSatisfy { $0.passed || $0.problems.contains("interrupted") }
        }

        for rate in try command.sweepRates() ?? [command.rate] where !stop.isSet {
            let result = try await runStep(rate)
            results.append(result)
            show(BenchReport.render(result) + "\n")
        }
        if command.sweep != nil {
            show(BenchReport.summary(results, title: "sweep: \(results.count) rates"))
            if command.json { printFlushed(Self.encode(results)) }
        } else if command.json, let result = results.first {
            printFlushed(Self.encode(result))
        }
        return results.allSatisfy(\.passed)
    }

    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
    }
}
