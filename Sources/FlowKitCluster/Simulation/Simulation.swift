/// Runs the simulated cluster from seeds (see ``ClusterSimulation``): `flowkit simulate` and the
/// simulation tests call it.
package enum Simulation {
    /// One seed's run.
    package struct SeedResult: Sendable {
        package var seed: UInt64
        /// The options of the run, as `flowkit simulate` takes them.
        package var commandLine = ""
        package var failures: [SimulationFailure]
        /// The story's last lines, for a failing seed (or one run alone to tell it).
        package var trace: [String]
        package var faults: [String]
        package var messages: Int
        package var dropped: Int
        package var entries: UInt64
        package var acknowledged: Int
        /// Replicated: the terms the election service handed out (the first leader's included).
        package var terms: Int
        /// Replicated: acknowledgements and publications a leader held back, its lease in doubt.
        package var fenced: Int
        /// Nodes that started again from their local snapshot, those of them whose snapshot
        /// was a fuzzy copy (its instances at different seqs), and those that read deltas after
        /// its base; the deltas saved.
        package var localResumes = 0
        package var fuzzyResumes = 0
        package var deltaResumes = 0
        package var deltasSaved = 0

        package var passed: Bool { failures.isEmpty }

        /// What a failing seed prints: the failures, how to replay it, and what led up to it.
        package var report: String {
            var lines = ["seed \(seed) FAILED:"]
            lines += failures.map { "  - \($0)" }
            lines.append("replay: SWIFT_DETERMINISTIC_HASHING=1 flowkit simulate --seed \(seed)" + (commandLine.isEmpty ? "" : " " + commandLine))
            lines.append("faults: " + (faults.isEmpty ? "none" : faults.joined(separator: "; ")))
            lines.append("the last \(trace.count) lines:")
            lines += trace.map { "  \($0)" }
            return lines.joined(separator: "\n")
        }
    }

    /// Runs one seed; `story`: keep the story's last lines even if it passes.
    package static func run(seed: UInt64, options: SimulationOptions = SimulationOptions(), story: Bool = false) async -> SeedResult {
        let simulation = ClusterSimulation(seed: seed, options: options)
        let failures: [SimulationFailure]
        do {
            failures = try await simulation.run()
        } catch {
            failures = [SimulationFailure(check: "the simulation ran", detail: "\(error)")]
        }
        return SeedResult(
            seed: seed,
            commandLine: options.commandLine,
            failures: failures,
            trace: failures.isEmpty && !story ? [] : simulation.trace.recent,
            faults: simulation.history.faults,
            messages: simulation.network.sent,
            dropped: simulation.network.dropped,
            entries: simulation.checkedDisk?.log.lastSeq ?? 0,
            acknowledged: simulation.history.emits.values.filter { $0.acknowledged != nil }.count,
            terms: Int(simulation.etcd.epoch),
            fenced: simulation.coordinatorCounters.fencedDrops.load,
            localResumes: simulation.localSnapshots.resumed,
            fuzzyResumes: simulation.localSnapshots.resumedFuzzy,
            deltaResumes: simulation.localSnapshots.resumedWithDeltas,
            deltasSaved: simulation.localSnapshots.deltasSaved
        )
    }

    /// Seeds run, and what they found.
    package struct Summary: Sendable {
        package var seeds = 0
        package var failed: [SeedResult] = []
        package var messages = 0
        package var entries: UInt64 = 0
        package var acknowledged = 0
        package var terms = 0
        package var fenced = 0
        package var localResumes = 0
        package var fuzzyResumes = 0
        package var deltaResumes = 0
        package var deltasSaved = 0
        package var seconds = 0.0

        package var seedsPerSecond: Double { seconds > 0 ? Double(seeds) / seconds : 0 }
    }

    /// Runs `seeds` in order until they are done or `budget` has passed, whichever comes first.
    ///
    /// - Parameter progress: Called after each seed with the summary so far.
    package static func run(
        seeds: Range<UInt64>,
        options: SimulationOptions = SimulationOptions(),
        budget: Duration? = nil,
        progress: (Summary, SeedResult) -> Void = { _, _ in }
    ) async -> Summary {
        let clock = ContinuousClock()
        let started = clock.now
        var summary = Summary()
        for seed in seeds {
            if let budget, clock.now - started >= budget { break }
            let result = await run(seed: seed, options: options)
            summary.seeds += 1
            summary.messages += result.messages
            summary.entries += result.entries
            summary.acknowledged += result.acknowledged
            summary.terms += result.terms
            summary.fenced += result.fenced
            summary.localResumes += result.localResumes
            summary.fuzzyResumes += result.fuzzyResumes
            summary.deltaResumes += result.deltaResumes
            summary.deltasSaved += result.deltasSaved
            if !result.passed { summary.failed.append(result) }
            let elapsed = clock.now - started
            summary.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            progress(summary, result)
            // A seed's awaits are uncontended actor hops that never give up the thread: without a
            // yield, seeds run back to back on one of the pool's threads for minutes, and tasks
            // of the same process (the unit tests beside these, on two cores) wait that long.
            await Task.yield()
        }
        return summary
    }
}
