import ArgumentParser
import FlowKitCluster
import Foundation

/// `flowkit simulate`: the whole cluster in one process, from seeds, with faults.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run the cluster's real state machines over a simulated network, disk and clock, one seed at a time, with faults.",
        discussion: """
            Each seed runs a coordinator and --nodes nodes in this process: the coordinator's and the \
            nodes' own state machines (the code the processes run), the coordinator's recovery from \
            its log, over a network that delays, drops, duplicates and reorders messages, a disk whose \
            syncs take time and that can fill up, and a simulated clock. Clients emit events for \
            --active-seconds of simulated time while faults strike: the coordinator crashes and \
            restarts (losing what it had not synced), nodes crash and restart (empty, or from a \
            local snapshot: a base and the deltas after it, each copied a few instances per tick, \
            one save in sixteen failing), nodes are partitioned from the coordinator, the disk \
            refuses writes, a process pauses (what arrives for it waits until it resumes). Then \
            every fault is healed and the cluster has --settle-seconds to converge, and the seed is checked:

              the log is whole: seqs 1 to the head, none missing or repeated
              nothing is ordered twice, and nothing acknowledged is lost: every event a client was
                told is ordered is in the log once, at the seq it was told
              every node applied every seq once, in order, and holds the state of the log replayed
              an entry's effects would run on the node and session that submitted it, once
              no divergence alarm: the digests the nodes report agree (the coordinator's check)

            With --coordinators 3 the coordinators are replicated: each runs its election and \
            standby machines against a simulated etcd (leases on the simulated clock), and the faults \
            strike the leader most of the time: it crashes, pauses (past its lease or not), is cut \
            from etcd or from everyone, its disk fills. Also checked: no coordinator acknowledges or \
            publishes while etcd names another leader (fencing), no log keeps an entry a leader wrote \
            past its lease, someone leads at the end, and every coordinator holds the same log.

            With --upgrade each seed also runs a rolling upgrade in the middle of its load, as \
            docs/VERSIONING.md describes it: the simulation's flow moves from build 1 to build 2 \
            (labelled cases, a new state field, steps from version 1), the coordinators restarted as \
            build 2 one at a time, then the nodes; clients write for their node's build, and the log is \
            replayed by build 2. Also checked: every ordered event is in its instance's state.

            A failing seed prints what broke, the faults it injected and the last --trace-lines of \
            its story (messages the machines logged, faults, syncs, restarts) at simulated times, and \
            replays exactly with --seed (with SWIFT_DETERMINISTIC_HASHING=1, which this command sets \
            for itself). --bug runs with a bug injected on purpose, to see the checks catch it.

            Exit codes: 0 every seed passed; 6 a seed failed; 1 the options were wrong.

              flowkit simulate --seeds 100000
              flowkit simulate --seed 1234
              flowkit simulate --seeds 50 --bug acknowledge-before-sync
              flowkit simulate --seeds 10000 --coordinators 3
              flowkit simulate --seeds 1000 --upgrade
            """
    )

    @Option(help: "How many seeds to run, from --first-seed on.")
    var seeds: UInt64 = 1_000

    @Option(help: "The first seed.")
    var firstSeed: UInt64 = 1

    @Option(help: "Run this one seed (and print its story even when it passes).")
    var seed: UInt64?

    @Option(help: "Stop after this many seconds of wall-clock time, whatever --seeds says.")
    var budget: Double?

    @Option(help: "Nodes in the simulated cluster.")
    var nodes = 3

    @Option(help: "Coordinators: 1 runs alone; 3 (or more) run replicated, with an election service, a leader and standbys.")
    var coordinators = 1

    @Option(help: "Faults each seed injects while the load runs.")
    var faults = 4

    @Option(help: "Simulated seconds of load and faults per seed.")
    var activeSeconds = 4.0

    @Option(help: "Simulated seconds after every fault is healed, for the cluster to converge.")
    var settleSeconds = 25.0

    @Option(help: "How many lines of a failing seed's story (or --seed's) to print.")
    var traceLines = 200

    @Option(help: "Inject a bug on purpose: \(InjectedBug.allCases.map(\.rawValue).joined(separator: ", ")).")
    var bug: String?

    @Flag(help: "Move every process from build 1 of the flow to build 2 in the middle of each seed's load, one at a time.")
    var upgrade = false

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func validate() throws {
        guard seeds >= 1, nodes >= 1, faults >= 0, activeSeconds > 0, settleSeconds > 0 else {
            throw ValidationError("--seeds and --nodes must be at least 1, --faults at least 0, the seconds positive")
        }
        guard coordinators == 1 || coordinators >= 3 else {
            throw ValidationError("--coordinators is 1, or 3 or more: two replicated coordinators cannot lose one and go on")
        }
        if let bug {
            guard let injected = InjectedBug(rawValue: bug) else {
                throw ValidationError("no bug named \(bug); known: \(InjectedBug.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if injected.needsReplicatedCoordinators, coordinators == 1 {
                throw ValidationError("\(bug) lives among replicated coordinators: add --coordinators 3")
            }
            if injected.needsUpgrade, !upgrade {
                throw ValidationError("\(bug) lives in build 2's steps: add --upgrade")
            }
        }
    }

    func run() async throws {
        try Self.ensureDeterministicHashing()
        var options = SimulationOptions()
        options.nodes = nodes
        options.coordinators = coordinators
        options.faults = faults
        options.activeSeconds = activeSeconds
        options.settleSeconds = settleSeconds
        options.traceLines = traceLines
        options.bug = bug.flatMap(InjectedBug.init(rawValue:))
        options.upgrade = upgrade
        if let seed {
            let result = await Simulation.run(seed: seed, options: options, story: true)
            let terms = coordinators > 1 ? ", \(result.terms) terms, \(result.fenced) acts fenced" : ""
            if result.passed {
                print(result.trace.joined(separator: "\n"))
                print("seed \(seed) passed: \(result.entries) entries, \(result.acknowledged) acknowledged, \(result.messages) messages (\(result.dropped) dropped)\(terms); faults: \(result.faults.joined(separator: "; "))")
            } else {
                print(result.report)
            }
            if !result.passed { throw ExitCode(6) }
            return
        }
        let summary = await Simulation.run(seeds: firstSeed..<(firstSeed + seeds), options: options, budget: budget.map { .milliseconds(Int($0 * 1_000)) }) { summary, result in
            if !result.passed {
                FileHandle.standardError.write(Data((result.report + "\n").utf8))
            }
            if !json, summary.seeds % 100 == 0 {
                FileHandle.standardError.write(Data("\(summary.seeds) seeds, \(summary.failed.count) failed, \(String(format: "%.0f", summary.seedsPerSecond))/s\n".utf8))
            }
        }
        let failedSeeds = summary.failed.map(\.seed)
        if json {
            let object: JSONValue = [
                "seeds": .integer(Int64(summary.seeds)), "failed": .array(failedSeeds.map { .integer(Int64(bitPattern: $0)) }),
                "seconds": .number(summary.seconds), "seedsPerSecond": .number(summary.seedsPerSecond),
                "messages": .integer(Int64(summary.messages)), "entries": .integer(Int64(summary.entries)),
                "acknowledged": .integer(Int64(summary.acknowledged)), "terms": .integer(Int64(summary.terms)), "fenced": .integer(Int64(summary.fenced)),
                "localResumes": .integer(Int64(summary.localResumes)), "fuzzyResumes": .integer(Int64(summary.fuzzyResumes)),
                "deltaResumes": .integer(Int64(summary.deltaResumes)), "deltasSaved": .integer(Int64(summary.deltasSaved)),
            ]
            print(object.text())
        } else {
            print(
                "\(summary.seeds) seeds in \(String(format: "%.1f", summary.seconds)) s (\(String(format: "%.1f", summary.seedsPerSecond)) seeds/s): "
                    + "\(summary.entries) entries ordered, \(summary.acknowledged) acknowledged, \(summary.messages) messages; "
                    + (coordinators > 1 ? "\(summary.terms) terms of leadership, \(summary.fenced) acts fenced; " : "")
                    + "restarts from a local snapshot: \(summary.localResumes) (\(summary.fuzzyResumes) of one copied over several ticks, \(summary.deltaResumes) through deltas; \(summary.deltasSaved) deltas saved); "
                    + (failedSeeds.isEmpty ? "every seed passed" : "FAILED seeds: \(failedSeeds.map(String.init).joined(separator: ", "))")
            )
        }
        if !failedSeeds.isEmpty { throw ExitCode(6) }
    }

    /// Swift seeds its hashing per process; a seed replays exactly only with the same order of
    /// dictionary iteration, so this command runs itself again with deterministic hashing.
    static func ensureDeterministicHashing() throws {
        guard ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING", default: ""].isEmpty else { return }
        setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
        let arguments = CommandLine.arguments
        let pointers = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", pointers)
        throw ValidationError("could not run again with SWIFT_DETERMINISTIC_HASHING=1: \(String(cString: strerror(errno)))")
    }
}
