#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Testing

/// `flowkit bench` as users and CI run it: a short load against a cluster the bench starts itself,
/// checked for convergence and loss (not for speed), and `bench plot` on a small sweep.
extension ClusterProcessTests {
    /// The fields of `flowkit bench --json` these tests rely on; their names are the stable interface.
    struct BenchOutput: Decodable {
        struct Throughput: Decodable {
            var offered: Double
            var ordered: Double
            var applied: [String: Double]
        }
        struct Summary: Decodable {
            var count: Int
            var p50: Int
            var p90: Int
            var p99: Int
            var p999: Int
            var max: Int
        }
        struct Latency: Decodable {
            var ordered: Summary
            var applied: Summary
        }
        struct Resources: Decodable {
            var cpuSeconds: Double
            var peakRSSBytes: UInt64
            var threads: Int?
            var switchesPerEvent: Double?
        }
        struct Counts: Decodable {
            var sent: Int
            var acknowledged: Int
        }
        struct Population: Decodable {
            var instances: Int
            var acknowledged: Int
            var rssAfterBytes: [String: UInt64]
            var rssIdleBytes: [String: UInt64]?
            var bytesPerInstanceIdle: [String: Double]?
            var idleCPUPercent: [String: Double]
            var settledSeconds: Double?
            var joinSeconds: Double?
        }
        var throughput: Throughput
        var latency: Latency
        var resources: [String: Resources]
        var counts: Counts
        var converged: Bool
        var lost: Int
        var duplicated: Int
        var effectsMissing: Int
        var passed: Bool
        var problems: [String]
        var population: Population?
    }

    @Test(.serialized, arguments: [[], ["--effects"]])
    func benchConvergesWithNothingLost(extra: [String]) async throws {
        let output = try await Self.runBench(
            ["bench", "--rate", "2000", "--duration", "3", "--warmup", "1", "--nodes", "3", "--instances", "200", "--json", "--no-baseline", "--quiet"] + extra
        )
        let result = try JSONDecoder().decode(BenchOutput.self, from: Data(output.utf8))
        #expect(result.converged, "problems: \(result.problems)")
        #expect(result.lost == 0)
        #expect(result.duplicated == 0)
        #expect(result.effectsMissing == 0)
        #expect(result.passed, "problems: \(result.problems)")
        #expect(result.throughput.offered == 2_000)
        #expect(result.throughput.ordered > 0)
        #expect(Set(result.throughput.applied.keys) == ["node-1", "node-2", "node-3"])
        #expect(result.counts.acknowledged == result.counts.sent)
        let ordered = result.latency.ordered
        let applied = result.latency.applied
        #expect(ordered.count > 0 && applied.count == ordered.count)
        #expect(ordered.p50 <= ordered.p90 && ordered.p90 <= ordered.p99 && ordered.p99 <= ordered.p999 && ordered.p999 <= ordered.max)
        #expect(applied.p50 <= applied.p90 && applied.p90 <= applied.p99 && applied.p99 <= applied.p999 && applied.p999 <= applied.max)
        // "Ordered" is when the EMITTED reply reached the bench, "applied on all" when the last
        // node applied the entry by its own clock; the coordinator acks and publishes together, so
        // every node may apply an entry before its reply reaches the bench: the two are not
        // ordered, and only each one's percentiles are.
        for name in ["coordinator", "node-1", "node-2", "node-3", "bench"] {
            let resources = try #require(result.resources[name], "resources of \(name)")
            #expect(resources.peakRSSBytes > 0)
            // Each process sleeps and is woken as messages come: a wake-up or so per entry at this rate.
            #expect((resources.threads ?? 0) > 1 && (resources.switchesPerEvent ?? 0) > 0.01, "threads and context switches of \(name)")
        }
    }

    /// `--populate` gives every instance its state, waits with `--settle` until the cluster is
    /// quiet, watches the idle cluster (memory after the population and at the end of the idle
    /// time, idle CPU) and times a fresh node's join. Quiet under 5 % of a core: this cluster is a
    /// debug build, whose idle loop took 2.2-2.9 % of a core on a slow host (the default, 2 %,
    /// was never met there in 10 minutes).
    @Test func benchPopulatesEveryInstanceAndTimesAJoin() async throws {
        let output = try await Self.runBench(
            [
                "bench", "--rate", "1000", "--duration", "2", "--warmup", "1", "--nodes", "3", "--instances", "500", "--populate", "--populate-rate",
                "1000", "--settle", "--settle-below", "5", "--idle", "2", "--rest-after-ms", "0", "--json", "--no-baseline", "--quiet",
            ],
            timeout: .seconds(120)
        )
        let result = try JSONDecoder().decode(BenchOutput.self, from: Data(output.utf8))
        #expect(result.passed, "problems: \(result.problems)")
        let population = try #require(result.population)
        #expect(population.instances == 500 && population.acknowledged == 500)
        let processes: Set = ["coordinator", "node-1", "node-2", "node-3"]
        #expect(processes.isSubset(of: Set(population.rssAfterBytes.keys)))
        #expect(processes.isSubset(of: Set((population.rssIdleBytes ?? [:]).keys)) && processes.isSubset(of: Set((population.bytesPerInstanceIdle ?? [:]).keys)))
        #expect(processes.isSubset(of: Set(population.idleCPUPercent.keys)))
        // Quiet means under 5 % of a core for 5 s in a row: it took those 5 s at least. The idle
        // CPU is counted from the end of the settling (counted from the population's end, a
        // minute of settling showed as 113 % of a core over a 10 s idle window).
        #expect((population.settledSeconds ?? 0) >= 5, "settled: \(String(describing: population.settledSeconds))")
        for name in processes { #expect((population.idleCPUPercent[name] ?? 100) < 25, "idle CPU of \(name): \(population.idleCPUPercent)") }
        #expect((population.joinSeconds ?? 0) > 0, "a fresh node joined")
    }

    @Test func benchPlotDrawsTheSeries() async throws {
        let directory = NSTemporaryDirectory() + "flowkit-bench-plot-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let sweep = [(1_000.0, 180), (5_000.0, 240), (20_000.0, 900), (80_000.0, 25_000)].map { rate, p50 in
            """
            {"config":{"rate":\(rate),"nodes":3,"durability":"synced","eventSize":16,"codec":"binary","effects":false},
             "machine":{"cpus":2,"cpuModel":"Test CPU","kernel":"Linux 6","startedAt":"2025-01-01T00:00:00Z"},
             "latency":{"ordered":{"p50":\(p50 / 2),"p90":\(p50),"p99":\(p50 * 2),"p999":\(p50 * 3),"max":\(p50 * 4)},
                        "applied":{"p50":\(p50),"p90":\(p50 * 2),"p99":\(p50 * 4),"p999":\(p50 * 8),"max":\(p50 * 10)}}}
            """
        }
        try ("[" + sweep.joined(separator: ",") + "]").write(toFile: directory + "/sweep.json", atomically: true, encoding: .utf8)
        _ = try await Self.runBench(["bench", "plot", directory + "/sweep.json", "--out", directory + "/latency.svg"], directory: directory)
        let svg = try String(contentsOfFile: directory + "/latency.svg", encoding: .utf8)
        #expect(svg.hasPrefix("<svg"))
        #expect(svg.hasSuffix("</svg>\n"))
        for series in ["p50", "p90", "p99", "p99.9"] {
            #expect(svg.contains("data-series=\"\(series)\""), "series \(series)")
        }
        #expect(svg.components(separatedBy: "<circle").count - 1 == 16, "4 series × 4 rates")
        #expect(svg.contains("Test CPU, 2 CPUs"))
        #expect(svg.contains("log scale"))
    }

    /// Runs `flowkit <arguments>` to completion and returns its standard output.
    static func runBench(_ arguments: [String], directory: String? = nil, timeout: Duration = .seconds(60)) async throws -> String {
        let binary = try TestCluster.findBinary()
        let ownDirectory = directory == nil
        let directory = directory ?? NSTemporaryDirectory() + "flowkit-bench-it-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if ownDirectory { try? FileManager.default.removeItem(atPath: directory) } }
        let process = try ChildProcess.testChild(executable: binary, arguments: arguments, name: "bench", directory: directory)
        guard await process.waitForExit(timeout: timeout) else {
            await process.stop()
            throw HarnessError("flowkit \(arguments.joined(separator: " ")) did not finish within \(timeout)\n\(process.stderrReport())")
        }
        let stdout = (try? String(contentsOfFile: process.stdoutPath, encoding: .utf8)) ?? ""
        let status = process.status ?? -1
        guard status == 0 else {
            throw HarnessError("flowkit \(arguments.joined(separator: " ")) ended with \(ChildProcess.describe(status))\n\(stdout)\n\(process.stderrReport())")
        }
        return stdout
    }
}

extension ClusterProcessTests {
    /// `flowkit bench --trace`: every hop of the sampled events has a duration, and the hops of the
    /// ordered path add up to its end-to-end time (each event's own hops, so their medians need
    /// not; the check is on the sum of medians against a generous bound). With `--data-dir` the
    /// trace is kept, the bench's own side included, and `Benchmarks/slow-events.py` reads it.
    @Test func benchTraceBreaksEachEventsTimeDownByHop() async throws {
        let data = NSTemporaryDirectory() + "flowkit-trace-it-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: data) }
        let output = try await Self.runBench(
            [
                "bench", "--rate", "1000", "--duration", "3", "--warmup", "1", "--trace", "--trace-every", "10", "--json", "--no-baseline", "--quiet",
                "--data-dir", data,
            ]
        )
        struct Traced: Decodable {
            struct Hops: Decodable {
                struct Hop: Decodable {
                    var name: String
                    var latency: BenchOutput.Summary
                }
                var every: Int
                var sampled: Int
                var hops: [Hop]
            }
            var hops: Hops
            var passed: Bool
        }
        let result = try JSONDecoder().decode(Traced.self, from: Data(output.utf8))
        #expect(result.passed)
        #expect(result.hops.every == 10)
        #expect(result.hops.sampled > 250, "about one event in 10 of 4,000: \(result.hops.sampled)")
        let hops = Dictionary(uniqueKeysWithValues: result.hops.hops.map { ($0.name, $0.latency) })
        for hop in result.hops.hops {
            #expect(hop.latency.count > 250, "\(hop.name) was seen for \(hop.latency.count) events")
        }
        let commit = try #require(hops["coordinator: commit (append + fdatasync)"])
        let total = try #require(hops["ordered, end to end"])
        #expect(commit.p50 > 0 && commit.p50 < total.p50, "a commit is part of the ordered time")
        let pieces = result.hops.hops.prefix { $0.name != "ordered, end to end" }.map(\.latency.p50).reduce(0, +)
        #expect(pieces <= total.p50 * 3 && pieces * 3 >= total.p50, "the hops' medians (\(pieces) µs) roughly make up the whole (\(total.p50) µs)")

        // The bench's side, in the processes' own format: when each sampled event was due, sent
        // and answered.
        let benchSide = try String(contentsOfFile: data + "/trace/bench.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(benchSide.count == result.hops.sampled * 3, "three records per sampled event")
        #expect(benchSide.allSatisfy { $0.contains(#""stage":"bench."#) })
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let slowest = try await CommandRunner(directory: data).run(
            "/usr/bin/env", ["python3", root.appendingPathComponent("Benchmarks/slow-events.py").path, data + "/trace"], timeout: .seconds(60)
        )
        #expect(slowest.exitCode == 0, "\(slowest)")
        #expect(slowest.stdout.contains("\(result.hops.sampled) sampled events"), "\(slowest.stdout)")
        #expect(slowest.stdout.contains("node → coordinator"), "\(slowest.stdout)")
    }

    /// The Redis peer comparison runs as documented (briefly, twice): Redis with 3 replicas is
    /// started on ports of its own and stopped, both loads run in each run, and the medians of the
    /// runs compare them, with each run's ratio.
    @Test func redisPeerComparisonRuns() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = NSTemporaryDirectory() + "flowkit-redis-it-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandRunner(directory: directory).run(
            "/bin/bash",
            [root.appendingPathComponent("Benchmarks/peers/redis-compare.sh").path, "--duration", "2", "--rates", "2000", "--runs", "2",
             "--flowkit", try TestCluster.findBinary(), "--out", directory + "/out"],
            timeout: .seconds(300)
        )
        #expect(result.exitCode == 0, "\(result)")
        // Each run's own table goes to stderr, the medians to stdout.
        #expect(result.stderr.contains("| at 2,000/s: p50 to the durable acknowledgement"), "\(result.stderr)")
        #expect(result.stdout.contains("Medians of 2 runs"), "\(result.stdout)")
        #expect(result.stdout.contains("| at 2,000/s: p50 to the durable acknowledgement"), "\(result.stdout)")
        #expect(result.stdout.contains("passed in 2 of 2 runs"), "\(result.stdout)")
        for run in 1...2 {
            let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/out/run-\(run)/summary.json"))) as? [String: Any]
            let rates = summary?["rates"] as? [[String: Any]] ?? []
            #expect(rates.count == 1 && (rates.first?["redis"] as? [String: Any])?["answered"] as? Int == 4_000, "\(String(describing: summary))")
            #expect((summary?["maximum"] as? Int ?? 0) > 0, "the run says which rate was Redis's maximum")
        }
        let medians = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/out/medians.json"))) as? [String: Any]
        let figures = ((medians?["rates"] as? [[String: Any]])?.first?["figures"] as? [String: Any]) ?? [:]
        let p50 = figures["p50 to the durable acknowledgement"] as? [String: Any]
        #expect(medians?["runs"] as? Int == 2 && (p50?["ratios"] as? [Double])?.count == 2, "\(String(describing: medians))")
        #expect(ProcessTable.named("redis-server").isEmpty, "the script stopped every Redis it started")
    }

    /// `Benchmarks/hop-cost.c` builds and runs as its header says, in each mode: the libzmq and TCP
    /// echoes in C, and FlowKit's own (`flowkit bench-peer loop-echo`, a ROUTER on an I/O loop with
    /// the ZMTP engine), each answering every round trip and exiting.
    @Test(arguments: ["zmq", "tcp", "flowkit"])
    func hopCostRunsInEachMode(mode: String) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = NSTemporaryDirectory() + "flowkit-hop-cost-it-\(getpid())-\(mode)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let runner = CommandRunner(directory: directory)
        let compiled = try await runner.run(
            "/usr/bin/cc", ["-O2", "-o", directory + "/hop-cost", root.appendingPathComponent("Benchmarks/hop-cost.c").path, "-lzmq"],
            timeout: .seconds(120)
        )
        try #require(compiled.exitCode == 0, "\(compiled)")
        let result = try await runner.run(
            "/usr/bin/env", ["FLOWKIT=\(try TestCluster.findBinary())", directory + "/hop-cost", mode, "500", "2000"], timeout: .seconds(60)
        )
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdout.contains("\(mode) rate 2000/s: rtt p50"), "\(result)")
        #expect(result.stdout.contains("the echo side"), "\(result)")
    }

    /// `Benchmarks/peers/cluster-shape.c` builds and runs as its header says: the cluster's message
    /// pattern in plain C, every event answered, the CPU of the coordinator and each node counted.
    @Test func clusterShapeRuns() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = NSTemporaryDirectory() + "flowkit-cluster-shape-it-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let runner = CommandRunner(directory: directory)
        let compiled = try await runner.run(
            "/usr/bin/cc", ["-O2", "-o", directory + "/cluster-shape", root.appendingPathComponent("Benchmarks/peers/cluster-shape.c").path],
            timeout: .seconds(120)
        )
        try #require(compiled.exitCode == 0, "\(compiled)")
        let result = try await runner.run(directory + "/cluster-shape", ["2000", "1"], timeout: .seconds(60))
        #expect(result.exitCode == 0, "\(result)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        #expect(json?["events"] as? Int == 2_000, "\(result.stdout)")
        let cpu = json?["cpuSeconds"] as? [String: Double] ?? [:]
        #expect(["coordinator", "node-1", "node-2", "node-3"].allSatisfy { (cpu[$0] ?? 0) > 0 }, "\(result.stdout)")
        let ordered = json?["ordered"] as? [String: Int] ?? [:]
        #expect((ordered["p50"] ?? 0) > 0 && (ordered["p50"] ?? 0) <= (ordered["p99"] ?? 0), "\(result.stdout)")
    }

    /// The dashboard's cost script runs as documented (briefly): one cluster, the bench with the
    /// page closed and open in Chromium, the table of both sides; nothing it started is left.
    @Test func dashboardCostScriptRuns() async throws {
        guard HeadlessChromium.installedPath != nil else {
            Issue.record("chromium is not installed (scripts/install-deps --test installs it)")
            return
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = NSTemporaryDirectory() + "flowkit-dashboard-cost-it-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandRunner(directory: directory).run(
            "/usr/bin/env",
            ["python3", root.appendingPathComponent("Benchmarks/dashboard-cost.py").path, "--pairs", "1", "--duration", "2", "--rates", "1000,2000",
             "--flowkit", try TestCluster.findBinary(), "--out", directory + "/out"],
            timeout: .seconds(300)
        )
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stdout.contains("ordered/s offered 2,000"), "\(result.stdout)")
        #expect(result.stdout.contains("Chromium CPU % of a core") && result.stdout.contains("every end check passed: yes"), "\(result.stdout)")
        let benches = try FileManager.default.contentsOfDirectory(atPath: directory + "/out").filter { $0.hasPrefix("bench-") && $0.hasSuffix(".json") }
        #expect(benches.sorted() == ["bench-1-closed.json", "bench-2-open.json"], "\(benches)")
        _ = try await eventually("the script's Chromium gone", timeout: .seconds(10), every: .milliseconds(200)) {
            ProcessTable.named("chromium").isEmpty ? true : nil
        }
    }
}
