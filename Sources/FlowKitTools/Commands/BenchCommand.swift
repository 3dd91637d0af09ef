import ArgumentParser
import FlowKitCluster
import FlowKitCommands
import Foundation
import Logging

/// `flowkit bench`: load-tests a cluster at a fixed offered rate and checks it converged.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load-test a cluster: open-loop load, latency to ordered and to applied on every node, throughput, resources, and a convergence check.",
        discussion: """
            Starts a coordinator and nodes of its own (a fresh temporary directory, ports chosen by the \
            OS) unless --attach names a running 'flowkit cluster'. Events go out open-loop at --rate: each \
            has an intended send time, and latency is measured from it even when the sender falls behind \
            (the correction for coordinated omission). Each second's percentiles and throughput also go \
            to a web dashboard: an attached cluster's own, the one --dashboard names, or one the bench \
            serves with --serve-dashboard. "Applied on all nodes" is when the last node \
            reported (PROGRESS) that it had applied the event's seq. Raw ZeroMQ between this process and \
            a child is measured first, and every figure is also given as a ratio to it.

            Exit codes: 0 the end check passed; 6 it failed (not converged, an acknowledged event lost \
            or applied twice, an effect missing); 3, 4, 5 as for the other commands; 64 usage.

            flowkit bench --rate 10000 --duration 20
            flowkit bench --search --json > search.json
            flowkit bench --sweep 5000,10000,20000,50000 --json > sweep.json && flowkit bench plot sweep.json --out latency.svg
            flowkit bench --serve-dashboard 127.0.0.1:7490 --duration 60    # watch it at http://127.0.0.1:7490/
            flowkit bench --attach .flowkit/cluster                          # live on the cluster's own dashboard
            """,
        subcommands: [BenchPlotCommand.self]
    )

    @Option(help: "Offered load, events per second.")
    var rate: Double = 10_000

    @Option(help: "Seconds measured (after the warm-up).")
    var duration: Double = 10

    @Option(help: "Seconds of load before measuring.")
    var warmup: Double = 2

    @Option(help: "Nodes of the cluster the bench starts.")
    var nodes = 3

    @Option(help: "Coordinators of the cluster the bench starts: 1, or 3, 5 or 7 replicated ones with an etcd (the cost of replication).")
    var coordinators = 1

    @Option(help: "DEALER connections the load is spread over, round-robin over the nodes.")
    var connections = 8

    @Option(help: "Flow instances (load/<run>-<k>) the events are spread over.")
    var instances = 1_000

    @Flag(help: "Give every instance its state before the step (one event each, at --populate-rate), then watch the idle cluster for --idle seconds: memory per instance and idle CPU, and a step over instances that all hold state.")
    var populate = false

    @Option(help: "With --populate: events per second of the population.")
    var populateRate: Double = 10_000

    @Option(help: "With --populate: seconds the idle cluster is watched after the population (CPU per process).")
    var idle: Double = 10

    @Flag(help: "With --populate: before watching the idle cluster, wait until the population's own after-work is done (digests, instances going to rest): every cluster process under --settle-below of a core for 5 s in a row, at most 10 minutes. The step then measures a cluster that holds the instances, not one still settling them.")
    var settle = false

    @Option(help: "With --settle: the CPU, in % of a core, under which a process counts as quiet. A debug build's idle loop, or a slow or shared host, may need more.")
    var settleBelow: Double = 2

    @Option(help: "The started cluster's --rest-after-ms (nodes and coordinator): milliseconds an instance stays unchanged before it rests as a compact record (0: never). Default: theirs (60000).")
    var restAfterMs: Int?

    @Option(help: "Padding bytes per event.")
    var eventSize = 16

    @Flag(help: "Send tickWithEffect: each event starts an effect on its origin node, which sends an event back.")
    var effects = false

    @Option(help: "Event encoding the bench sends: binary or json.")
    var codec = "binary"

    @Option(help: "The coordinator's log mode for the cluster the bench starts: synced (fdatasync per group commit) or relaxed.")
    var durability = "synced"

    @Option(help: "Use the running cluster in this directory (its cluster.json) instead of starting one.")
    var attach: String?

    @Option(help: "Keep the started cluster's data and logs in this directory (default: a temporary one, removed).")
    var dataDir: String?

    @Option(help: "The log level of the started cluster's processes (their logs: --data-dir), e.g. info for each snapshot saved and its CPU.")
    var clusterLogLevel = "warning"

    @Option(help: "Run several rates in one cluster, e.g. 1000,5000,10000; prints an array of results with --json.")
    var sweep: String?

    @Flag(help: "Search for the highest sustained rate: double from --search-start, then bisect.")
    var search = false

    @Option(help: "The first rate --search tries.")
    var searchStart: Double = 20_000

    @Option(help: "With --search: the highest applied-on-all-nodes p99 (ms) a sustained rate may have.")
    var searchP99Limit: Double = 10

    @Option(help: "How often the sender wakes on its own at most, in µs; between, it sends what is due whenever replies wake it (any delay counts in the latencies).")
    var sendTick = 200

    @Flag(help: "Trace sampled events through every hop (node, coordinator, log, publish, every node) and print where the time goes. Not with --attach.")
    var trace = false

    @Option(help: "With --trace: one seq in this many is traced.")
    var traceEvery: UInt64 = 50

    @Option(help: "Show each second on the web dashboard at this URL, as it printed it (with ?token=…). With --attach, the cluster's own dashboard is used unless --no-dashboard.")
    var dashboard: String?

    @Option(help: "Serve a web dashboard of the cluster the bench starts, at host:port (port 0: any free one), showing the bench live.")
    var serveDashboard: String?

    @Flag(help: "Show the bench on no dashboard, not even an attached cluster's.")
    var noDashboard = false

    @Flag(help: "Skip the raw ZeroMQ baseline.")
    var noBaseline = false

    @Option(help: "Messages in the baseline's pub/sub run.")
    var baselineMessages = 1_000_000

    @Flag(help: "Print the result as JSON on stdout (the tables go to stderr).")
    var json = false

    @Flag(help: "No progress line every second.")
    var quiet = false

    func validate() throws {
        guard rate > 0, duration > 0, warmup >= 0 else { throw ValidationError("--rate and --duration must be positive, --warmup not negative") }
        guard (1...32).contains(nodes) else { throw ValidationError("--nodes must be 1 to 32") }
        guard [1, 3, 5, 7].contains(coordinators) else { throw ValidationError("--coordinators must be 1, 3, 5 or 7") }
        guard !(coordinators > 1 && attach != nil) else {
            throw ValidationError("--coordinators sets up a cluster the bench starts; an attached cluster has the coordinators it has")
        }
        guard (1...1_024).contains(connections) else { throw ValidationError("--connections must be 1 to 1024") }
        guard (1...1_000_000).contains(instances) else { throw ValidationError("--instances must be 1 to 1,000,000") }
        guard populateRate > 0, idle >= 0 else { throw ValidationError("--populate-rate must be positive, --idle not negative") }
        guard populate || !settle else { throw ValidationError("--settle waits for a population to settle: add --populate") }
        guard settleBelow > 0, settleBelow <= 100 else { throw ValidationError("--settle-below must be above 0 and at most 100 (% of a core)") }
        guard (restAfterMs ?? 0) >= 0 else { throw ValidationError("--rest-after-ms must be 0 (never) or more") }
        guard !(restAfterMs != nil && attach != nil) else { throw ValidationError("--rest-after-ms sets up a cluster the bench starts; an attached cluster has its own") }
        guard (0...(1 << 20) - 1).contains(eventSize) else { throw ValidationError("--event-size must be 0 to 1048575 bytes") }
        guard ["binary", "json"].contains(codec) else { throw ValidationError("--codec must be binary or json") }
        guard Logger.Level(rawValue: clusterLogLevel) != nil else {
            throw ValidationError("--cluster-log-level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")); got \(clusterLogLevel)")
        }
        guard !(clusterLogLevel != "warning" && attach != nil) else {
            throw ValidationError("--cluster-log-level sets up a cluster the bench starts; an attached cluster logs as it was started")
        }
        guard ["synced", "relaxed"].contains(durability) else { throw ValidationError("--durability must be synced or relaxed") }
        guard !(search && sweep != nil) else { throw ValidationError("--search and --sweep cannot be combined") }
        _ = try sweepRates()
        guard (10...100_000).contains(sendTick) else { throw ValidationError("--send-tick must be 10 to 100000 µs") }
        guard baselineMessages >= 1_000 else { throw ValidationError("--baseline-messages must be at least 1000") }
        guard !(trace && attach != nil) else {
            throw ValidationError("--trace needs a cluster the bench starts (its processes record the hops): drop --attach")
        }
        guard traceEvery >= 1 else { throw ValidationError("--trace-every must be at least 1") }
        try validateDashboard()
    }

    private func validateDashboard() throws {
        if let dashboard {
            guard let url = URL(string: dashboard), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw ValidationError("--dashboard is the dashboard's URL, e.g. http://127.0.0.1:7480/; got \(dashboard)")
            }
        }
        if let serveDashboard {
            guard Dashboard.parse(listen: serveDashboard) != nil else {
                throw ValidationError("--serve-dashboard is host:port, e.g. 127.0.0.1:7480; got \(serveDashboard)")
            }
            guard attach == nil else {
                throw ValidationError("--serve-dashboard serves the cluster the bench starts; an attached cluster has its own (--dashboard names another)")
            }
        }
        guard !(dashboard != nil && serveDashboard != nil) else { throw ValidationError("--dashboard and --serve-dashboard cannot be combined") }
        guard !(noDashboard && (dashboard != nil || serveDashboard != nil)) else {
            throw ValidationError("--no-dashboard cannot be combined with --dashboard or --serve-dashboard")
        }
    }

    func sweepRates() throws -> [Double]? {
        guard let sweep else { return nil }
        let rates = sweep.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard !rates.isEmpty, rates.allSatisfy({ ($0 ?? 0) > 0 }) else {
            throw ValidationError("--sweep takes positive rates separated by commas, e.g. 1000,5000,10000")
        }
        return rates.compactMap { $0 }
    }

    var benchConfiguration: BenchConfiguration {
        BenchConfiguration(
            rate: rate, duration: duration, warmup: warmup, nodes: nodes, coordinators: coordinators, connections: connections, instances: instances,
            populateRate: populate ? populateRate : nil, idleSeconds: populate ? idle : nil, settle: populate && settle,
            settleBelowPercent: populate && settle ? settleBelow : nil, eventSize: eventSize, effects: effects, codec: codec, durability: attach == nil ? durability : "unknown", attach: attach,
            sendTick: sendTick, traceEvery: trace ? traceEvery : nil
        )
    }

    func run() async throws {
        var logger = Logger(label: "flowkit.bench")
        logger.logLevel = .warning
        let session = BenchSession(command: self, logger: logger)
        let passed: Bool
        do {
            passed = try await session.run()
        } catch let error as BenchError {
            printError("error: \(error.message)")
            throw ExitCode(error.code == .input || error.code == .attach ? 64 : 1)
        } catch let error as ExitCode {
            throw error
        } catch {
            throw fail(error)
        }
        if !passed { throw ExitCode(ExitCodes.checkFailed) }
    }
}
