@testable import FlowKitCluster
import Foundation
import Testing

/// The whole cluster in one process, from seeds: the real machines over a simulated network,
/// disk and clock, with faults. `FLOWKIT_SIMULATION_SEEDS` sets how many seeds (and
/// `FLOWKIT_SIMULATION_SECONDS` the wall-clock budget) for a longer run.
@Suite struct SimulationTests {
    static var seeds: UInt64 { ProcessInfo.processInfo.environment["FLOWKIT_SIMULATION_SEEDS"].flatMap(UInt64.init) ?? 200 }
    static var budget: Duration { .seconds(ProcessInfo.processInfo.environment["FLOWKIT_SIMULATION_SECONDS"].flatMap(Int.init) ?? 120) }

    @Test func everySeedKeepsEveryPromise() async {
        let summary = await Simulation.run(seeds: 1..<(1 + Self.seeds), budget: Self.budget)
        print(
            "simulation: \(summary.seeds) seeds in \(String(format: "%.1f", summary.seconds)) s (\(String(format: "%.1f", summary.seedsPerSecond))/s), "
                + "\(summary.messages) messages, \(summary.entries) entries ordered, \(summary.acknowledged) acknowledged, \(summary.failed.count) failed"
        )
        for failure in summary.failed.prefix(3) {
            Issue.record(Comment(rawValue: failure.report))
        }
        #expect(summary.seeds > 0)
    }

    @Test func aSeedReplaysExactly() async {
        let first = await Simulation.run(seed: 42)
        let second = await Simulation.run(seed: 42)
        #expect(first.messages == second.messages && first.entries == second.entries && first.faults == second.faults)
    }

    /// The checks are not blind: each bug, injected on purpose, is caught within a few seeds.
    @Test(arguments: InjectedBug.allCases)
    func anInjectedBugIsCaught(_ bug: InjectedBug) async {
        var options = SimulationOptions()
        options.bug = bug
        var caught: Simulation.SeedResult?
        _ = await Simulation.run(seeds: 1..<41, options: options) { _, result in
            if caught == nil, !result.passed { caught = result }
        }
        guard let caught else {
            Issue.record("\(bug.rawValue) went unnoticed for 40 seeds")
            return
        }
        print("\(bug.rawValue): caught by seed \(caught.seed): \(caught.failures.prefix(2).map(\.description).joined(separator: "; "))")
    }

    /// Seeds that found bugs, kept: each must pass from now on.
    /// - 1, 34: entries a node submitted while joining through a snapshot were inside the
    ///   snapshot and their effects ran nowhere (NodeMachine.holdsSubmissions).
    /// - 55, 62, 70: a node first heard of a new term from an ACK or heartbeat older than entries
    ///   of that term it had applied, took it for lost entries and dropped its state and effects
    ///   (CoordinatorLink.applied(epoch:)).
    @Test(arguments: [1, 34, 55, 62, 70] as [UInt64])
    func regressionSeed(_ seed: UInt64) async {
        let result = await Simulation.run(seed: seed)
        #expect(result.passed, Comment(rawValue: result.report))
    }
}
