import FlowKitCluster
import FlowKitCommands
import Foundation

/// `flowkit bench --populate`: before a step, one event to each of its instances, so that every
/// instance holds state when the step begins (a cluster of a million rooms, most of them idle),
/// then the idle cluster watched for a while. What it measures: each process's resident memory
/// before and after (the growth per instance), each process's CPU while nothing happens, and, in a
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
        if runner.live, idleSeconds > 0 {
            FileHandle.standardError.write(Data("populated in \(BenchFormat.fixed(populatedSeconds, 1)) s; watching the idle cluster for \(BenchFormat.fixed(idleSeconds, 0)) s\n".utf8))
        }
        let idleStart = ContinuousClock.now
        try? await Task.sleep(for: .seconds(idleSeconds))
        let idleEnd = processes.sample()
        let watched = max(0.001, idleStart.duration(to: .now) / .milliseconds(1) / 1_000)

        var figures = BenchResult.Population(
            instances: plan.count, acknowledged: outcome.acknowledged, seconds: populatedSeconds, rssBeforeBytes: [:], rssAfterBytes: [:],
            bytesPerInstance: [:], rssIdleBytes: idleSeconds > 0 ? [:] : nil, bytesPerInstanceIdle: idleSeconds > 0 ? [:] : nil,
            idleSeconds: (watched * 10).rounded() / 10, idleCPUPercent: [:]
        )
        for (name, stats) in after {
            figures.rssAfterBytes[name] = stats.rssBytes
            if let start = before[name] {
                figures.rssBeforeBytes[name] = start.rssBytes
                let growth = Double(stats.rssBytes) - Double(start.rssBytes)
                figures.bytesPerInstance[name] = (growth / Double(max(1, plan.count))).rounded()
            }
            if let end = idleEnd[name] {
                figures.idleCPUPercent[name] = (max(0, end.cpuSeconds - stats.cpuSeconds) / watched * 1_000).rounded() / 10
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
