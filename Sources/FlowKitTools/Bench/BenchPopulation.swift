import FlowKitCluster
import FlowKitCommands
import Foundation

/// `flowkit bench --populate`: before a step, one event to each of its instances, so that every
/// instance holds state when the step begins (a cluster of a million rooms, most of them idle),
/// then the idle cluster watched for a while. What it measures: each process's resident memory
/// before and after (the growth per instance), what its allocator holds for it at the end of the
/// idle time (live data, without freed pages not yet given back), each process's CPU while nothing
/// happens, and, in a
/// cluster the bench started, how long a fresh node takes to join behind all those instances (a
/// snapshot of them), after which it is stopped again.
struct BenchPopulation {
    /// What a population did; the step's end check counts its events too.
    struct Outcome: Sendable {
        var figures: BenchResult.Population
        var acknowledgedPerInstance: [Int]
        /// Sent, neither acknowledged nor refused: their outcome is unknown.
        var unknownPerInstance: [Int]
        var problems: [String]
    }

    let runner: BenchRunner
    let configuration: BenchConfiguration
    /// How long a fresh node may take to join behind the population.
    static let joinTimeout: Duration = .seconds(120)

    func run(firstRequest: UInt64, prefix: String, rate: Double) async throws -> Outcome {
        let (target, recorder, connections) = (runner.target, runner.recorder, runner.connections)
        let processes = target.processes
        let before = processes.sample()
        let allocatedBefore = processes.allocatedBytes()
        let began = ContinuousClock.now
        let plan = LoadPlan.population(
            firstRequest: firstRequest, configuration: configuration, startMicros: BenchClock.wallMicros() + 300_000, prefix: prefix, rate: rate
        )
        let seconds = Double(plan.count) / rate
        if runner.live {
            FileHandle.standardError.write(Data("populating \(BenchFormat.count(plan.count)) instances at \(BenchFormat.rate(rate))/s (\(BenchFormat.fixed(seconds, 0)) s)\n".utf8))
        }
        recorder.begin(plan)
        // Watched like a step, so that what is applied resolves as it goes.
        try await connections.watch(seconds: UInt32(seconds) + 300)
        let report = await runner.sender.run(
            plan: plan, payload: configuration.payload(), codec: configuration.payloadCodec, sockets: connections.emitters,
            loop: connections.loop, tick: UInt64(configuration.sendTick), maxOverrun: max(10, seconds), stop: runner.stop
        )
        let answerDeadline = ContinuousClock.now + .seconds(15)
        while recorder.answered < report.sent, ContinuousClock.now < answerDeadline, !runner.stop.isSet {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let outcome = recorder.outcome()
        var problems: [String] = []
        if report.unsent > 0 { problems.append("\(report.unsent) of its events were never sent: the bench could not keep up with --populate-rate") }
        // Every node holds every instance before anything is measured.
        _ = await EndCheck(target: target, addresses: [], acknowledged: [], unknown: [], effects: configuration.effects, timeout: .seconds(180))
            .waitForQuiescence(problems: &problems)
        let populatedSeconds = (began.duration(to: .now) / .milliseconds(1)).rounded() / 1_000
        let after = processes.sample()
        let idleSeconds = configuration.idleSeconds ?? 0
        if runner.live {
            FileHandle.standardError.write(Data("populated in \(BenchFormat.fixed(populatedSeconds, 1)) s\n".utf8))
        }
        var settledSeconds: Double?
        if configuration.settle == true {
            settledSeconds = await waitUntilSettled()
            if settledSeconds == nil, !runner.stop.isSet {
                problems.append("the cluster was not quiet \(settleRule.timeout) after the population (\(settleRule.description))")
            }
        }
        if runner.live, idleSeconds > 0 {
            FileHandle.standardError.write(Data("watching the idle cluster for \(BenchFormat.fixed(idleSeconds, 0)) s\n".utf8))
        }
        let idleStart = ContinuousClock.now
        let idleBegin = processes.sample()
        try? await Task.sleep(for: .seconds(idleSeconds))
        let idleEnd = processes.sample()
        let allocatedIdle = idleSeconds > 0 ? processes.allocatedBytes() : [:]
        let watched = max(0.001, idleStart.duration(to: .now) / .milliseconds(1) / 1_000)

        var figures = BenchResult.Population(
            instances: plan.count, acknowledged: outcome.acknowledged, seconds: populatedSeconds, rssBeforeBytes: [:], rssAfterBytes: [:],
            bytesPerInstance: [:], rssIdleBytes: idleSeconds > 0 ? [:] : nil, bytesPerInstanceIdle: idleSeconds > 0 ? [:] : nil,
            idleSeconds: (watched * 10).rounded() / 10, idleCPUPercent: [:]
        )
        figures.settledSeconds = settledSeconds
        if !allocatedIdle.isEmpty {
            figures.allocatedBeforeBytes = allocatedBefore
            figures.allocatedIdleBytes = allocatedIdle
            figures.allocatedPerInstanceIdle = [:]
            for (name, idle) in allocatedIdle {
                guard let start = allocatedBefore[name] else { continue }
                figures.allocatedPerInstanceIdle?[name] = ((Double(idle) - Double(start)) / Double(max(1, plan.count))).rounded()
            }
        }
        for (name, stats) in after {
            figures.rssAfterBytes[name] = stats.rssBytes
            if let start = before[name] {
                figures.rssBeforeBytes[name] = start.rssBytes
                let growth = Double(stats.rssBytes) - Double(start.rssBytes)
                figures.bytesPerInstance[name] = (growth / Double(max(1, plan.count))).rounded()
            }
            if let end = idleEnd[name], let begin = idleBegin[name] {
                figures.idleCPUPercent[name] = (max(0, end.cpuSeconds - begin.cpuSeconds) / watched * 1_000).rounded() / 10
                if let start = before[name] {
                    figures.rssIdleBytes?[name] = end.rssBytes
                    figures.bytesPerInstanceIdle?[name] = ((Double(end.rssBytes) - Double(start.rssBytes)) / Double(max(1, plan.count))).rounded()
                }
            }
        }
        figures.joinSeconds = try await timeJoin()
        if figures.joinSeconds == nil, runner.target.local != nil, !runner.stop.isSet {
            problems.append("a fresh node had not applied the head \(Self.joinTimeout) after it started")
        }
        if outcome.acknowledged < plan.count {
            problems.append("\(plan.count - outcome.acknowledged) of its events were not acknowledged within 15 s of the last: lower --populate-rate")
        }
        let unknown = (0..<plan.instances).map { instance in
            // One event per instance.
            instance < report.sentPerInstance.count
                ? report.sentPerInstance[instance] - outcome.acknowledgedPerInstance[instance] - outcome.refusedPerInstance[instance] : 0
        }
        return Outcome(figures: figures, acknowledgedPerInstance: outcome.acknowledgedPerInstance, unknownPerInstance: unknown, problems: problems)
    }

    /// When a population has settled (`--settle`): every process of the cluster (not the bench)
    /// under ``cpuPercent`` of a core over the last ``window``, watched for at most ``timeout``.
    /// A million populated instances keep each process busy for a minute or two after the last
    /// event (their digests, then each going to rest a minute after it last changed): work that
    /// follows the population, which a step measured meanwhile would count as the cost of holding them.
    struct SettleRule: CustomStringConvertible {
        var cpuPercent = 2.0
        var window: Duration = .seconds(5)
        var timeout: Duration = .seconds(600)

        var description: String { "every process under \(BenchFormat.fixed(cpuPercent, cpuPercent < 10 ? 1 : 0)) % of a core for \(window)" }
    }

    /// The rule `--settle` waits for: under `--settle-below` (2 % of a core by default).
    var settleRule: SettleRule { SettleRule(cpuPercent: configuration.settleBelowPercent ?? 2) }

    /// Samples the cluster's processes every second until ``settleRule`` holds; the seconds that
    /// took, or nil at its timeout (or when the bench is stopped).
    private func waitUntilSettled() async -> Double? {
        let rule = settleRule
        let processes = runner.target.processes
        let started = ContinuousClock.now
        let windowSamples = Int(rule.window / .seconds(1))
        var samples: [(at: ContinuousClock.Instant, stats: [String: ProcessStats])] = []
        var lastNote = started
        while started.duration(to: .now) < rule.timeout, !runner.stop.isSet {
            samples.append((.now, processes.sample()))
            if samples.count > windowSamples + 1 { samples.removeFirst() }
            if samples.count == windowSamples + 1, let first = samples.first, let last = samples.last {
                let seconds = max(0.001, first.at.duration(to: last.at) / .milliseconds(1) / 1_000)
                let busiest = last.stats.filter { $0.key != "bench" }.map { name, stats in
                    (name, max(0, stats.cpuSeconds - (first.stats[name]?.cpuSeconds ?? 0)) / seconds * 100)
                }.max { $0.1 < $1.1 }
                if let busiest, busiest.1 < rule.cpuPercent {
                    return (started.duration(to: .now) / .milliseconds(1)).rounded() / 1_000
                }
                if runner.live, lastNote.duration(to: .now) >= .seconds(10), let busiest {
                    lastNote = .now
                    let waited = started.duration(to: .now) / .seconds(1)
                    FileHandle.standardError.write(Data("settling: \(BenchFormat.fixed(waited, 0)) s, busiest \(busiest.0) at \(BenchFormat.fixed(busiest.1, 1)) % of a core\n".utf8))
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
        return nil
    }

    /// Starts one more node, with no data, and times it until it has applied the head (it joins
    /// through the coordinator's snapshot); stops it again. `nil` for an attached cluster.
    private func timeJoin() async throws -> Double? {
        // (A cluster the bench starts has no CURVE keys to give the new node's client.)
        guard let local = runner.target.local, runner.target.file.curve == nil else { return nil }
        let id = UInt32(runner.target.nodes.count + 1)
        let head = runner.target.head.head
        let started = ContinuousClock.now
        let entry = try await local.startNode(id: id)
        defer { Task { await local.stopNode(id) } }
        let client = try await ClusterClient(endpoint: entry.clientEndpoint, logger: runner.logger)
        defer { Task { await client.close() } }
        let deadline = ContinuousClock.now + Self.joinTimeout
        while ContinuousClock.now < deadline, !runner.stop.isSet {
            if let status = try? await client.status(), status.applied >= head {
                let seconds = (started.duration(to: .now) / .milliseconds(1)).rounded() / 1_000
                await local.stopNode(id)
                return seconds
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }
}
