import ArgumentParser
import FlowKitCommands
import Foundation
import Logging

/// `flowkit chaos`: a cluster under load, faults injected, and a check of what must hold.
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Inject faults into a cluster under load and check that nothing acknowledged is lost or applied twice.",
        discussion: """
            Starts a coordinator (durable log) and nodes (local snapshots) in a fresh directory, and a \
            steady load of ledger records with unique ids from every node, recording every id the \
            cluster acknowledged, and a timer started at each node, so every node owns an effect. Then, one after another, --faults faults spread over --duration \
            seconds, in a shuffled round of the --kinds:

              node-kill         kill -9 a random node, restart it on its endpoint and data directory
              node-down         kill -9 a random node, leave it down 5-8 s (past the node timeout), restart it
              coordinator-kill  kill -9 the coordinator, restart it on its log
              node-pause        SIGSTOP a random node for 0.5-4 s, then SIGCONT
              connection-drop   SIGUSR1: a random node drops and remakes its coordinator connections
              partition         (--partitions) cut a random node off the network for 1-6 s
              slow-link         (--partitions) a node's link slowed for 2-6 s: tc netem 40 ms delay and
                                10% loss, or a tbf limit of 200 kbit/s where the kernel has no netem

            After each fault it times how long every node takes to apply the head the coordinator \
            announces after the heal. At the end it waits for the nodes to converge and checks: every \
            acknowledged id on every node exactly once, no id twice anywhere, the log holding each id at \
            its acknowledged seq, equal digests, no crash, no divergence alarm, every timer tick ordered \
            from the timer's owner at the time (takeovers move them), every timer still ticking. --seed replays the same \
            faults, victims and pauses.

            --partitions runs each process in a network namespace of its own (root, ip netns, tc); the \
            namespaces and links are the run's own and are removed at the end, and stale ones of a \
            killed run at the next start.

            --slow-consumer measures instead what monitors that stop reading cost: the throughput of an \
            unpaced load in alternating phases without and with two stalled monitors (a SUB socket never \
            read, a SIGSTOPped 'flowkit monitor'), and every process's memory; then the same end check.

            Exit codes: 0 every invariant held; 6 one failed (logs kept); 1 the run could not be set up.

              flowkit chaos --duration 60 --faults 12 --seed 7
              flowkit chaos --duration 900 --faults 60 --partitions --kinds all --json > chaos.json
              flowkit chaos --slow-consumer --rounds 3 --phase-seconds 20
            """
    )

    @Option(help: "Nodes in the cluster.")
    var nodes = 3

    @Option(help: "Seconds of load and faults.")
    var duration: Double = 60

    @Option(help: "How many faults, spread over the duration.")
    var faults = 10

    @Option(help: "Fault kinds, comma-separated, or 'all' (node-kill, node-down, coordinator-kill, node-pause, connection-drop; partition and slow-link with --partitions).")
    var kinds = "all"

    @Option(help: "Seed for every random choice: the same seed replays the same run of faults.")
    var seed: UInt64 = 1

    @Flag(help: "Run each process in its own network namespace, so partition and slow-link faults are possible (needs root).")
    var partitions = false

    @Option(help: "Load workers per node (each has one emit in flight).")
    var workers = 2

    @Option(help: "Emits per second over the whole cluster; 0 for as fast as the cluster answers.")
    var rate: Double = 400

    @Option(help: "Ledger instances the records are spread over.")
    var instances = 8

    @Option(help: "The coordinator's log mode: synced or relaxed.")
    var durability = "synced"

    @Option(help: "Seconds the cluster may take to catch up after a fault, and to converge at the end.")
    var convergeTimeout: Double = 60

    @Option(help: "Keep the cluster's data and logs here (default: a temporary directory, removed when every invariant held).")
    var dir: String?

    @Flag(help: "Measure throughput and memory with and without stalled monitors instead of injecting faults.")
    var slowConsumer = false

    @Option(help: "With --slow-consumer: stalled phases, each between two baseline phases.")
    var rounds = 3

    @Option(help: "With --slow-consumer: seconds per phase.")
    var phaseSeconds: Double = 15

    @Flag(help: "Print the report as JSON on standard output (the tables go to standard error).")
    var json = false

    @Flag(help: "No line per fault as it happens.")
    var quiet = false

    func validate() throws {
        guard (2...16).contains(nodes) else { throw ValidationError("--nodes must be 2 to 16") }
        guard (1...100).contains(rounds), phaseSeconds >= 1 else { throw ValidationError("--rounds must be 1 to 100, --phase-seconds at least 1") }
        guard duration >= 5 else { throw ValidationError("--duration must be at least 5 seconds") }
        guard faults >= 0 else { throw ValidationError("--faults must not be negative") }
        guard (1...64).contains(workers), (1...1_000).contains(instances) else { throw ValidationError("--workers 1-64, --instances 1-1000") }
        guard rate >= 0, convergeTimeout > 0 else { throw ValidationError("--rate must not be negative, --converge-timeout positive") }
        guard ["synced", "relaxed"].contains(durability) else { throw ValidationError("--durability must be synced or relaxed") }
        do {
            _ = try FaultKind.parseList(kinds, partitions: partitions)
        } catch let error as ChaosError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        var logger = Logger(label: "flowkit.chaos")
        logger.logLevel = .warning
        if slowConsumer { return try await runSlowConsumer(logger: logger) }
        var configuration = ChaosConfiguration()
        configuration.nodes = nodes
        configuration.duration = duration
        configuration.faults = faults
        configuration.kinds = try FaultKind.parseList(kinds, partitions: partitions)
        configuration.seed = seed
        configuration.partitions = partitions
        configuration.workersPerNode = workers
        configuration.rate = rate > 0 ? rate : nil
        configuration.instances = instances
        configuration.durability = durability
        configuration.convergeTimeout = .milliseconds(Int(convergeTimeout * 1_000))
        configuration.directory = dir
        configuration.quiet = quiet
        let stop = StopFlag()
        let session = ChaosSession(configuration: configuration, logger: logger, stop: stop)
        try await runCheckedSession(json: json, stop: stop, logger: logger) { try await session.run() }
    }

    private func runSlowConsumer(logger: Logger) async throws {
        let directory = try dir ?? ChaosSession.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bench = SlowConsumerBench(nodes: nodes, rounds: rounds, phaseSeconds: phaseSeconds, workersPerNode: workers * 4, logger: logger)
        let result: SlowConsumerBench.Result
        do {
            result = try await bench.run(directory: directory)
        } catch {
            printError("error: \(error)")
            throw ExitCode.failure
        }
        if json {
            printError(result.text)
            printFlushed(jsonLine(result))
        } else {
            printFlushed(result.text)
        }
        guard result.converged, result.audit.passed else { throw ExitCode(ExitCodes.checkFailed) }
        if dir == nil { try? FileManager.default.removeItem(atPath: directory) }
    }
}
