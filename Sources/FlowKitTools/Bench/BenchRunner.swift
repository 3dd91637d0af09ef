import FlowKitCluster
import FlowKitCommands
import Foundation
import Histogram
import Logging
import Synchronization

/// Runs bench steps against one cluster: each step offers one rate, measures, then checks that the
/// cluster converged with nothing lost. Steps of a sweep or a search share the cluster; each uses
/// instances of its own (`load/<run>-<step>-<k>`), so its counts are its own.
final class BenchRunner: Sendable {
    let base: BenchConfiguration
    let target: BenchTarget
    let connections: LoadConnections
    let recorder: LatencyRecorder
    let machine: MachineInfo
    let baseline: BaselineResult?
    let stop: StopFlag
    let live: Bool
    /// Where each second goes besides stderr: a web dashboard, if one was named or served.
    let dashboard: DashboardReporter?
    let logger: Logger
    let sender = OpenLoopSender()
    private let runTag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    private let nextRequest = Mutex<UInt64>(1)

    init(
        base: BenchConfiguration, target: BenchTarget, machine: MachineInfo, baseline: BaselineResult?, stop: StopFlag, live: Bool,
        dashboard: DashboardReporter?, logger: Logger
    ) async throws {
        self.base = base
        self.target = target
        self.machine = machine
        self.baseline = baseline
        self.stop = stop
        self.live = live
        self.dashboard = dashboard
        self.logger = logger
        let recorder = LatencyRecorder(nodes: target.nodes.count, traceEvery: base.traceEvery)
        self.recorder = recorder
        connections = try await LoadConnections(
            nodes: target.nodes, connections: base.connections, transport: target.transport, recorder: recorder, logger: logger
        )
    }

    func close() async {
        await connections.close()
    }

    /// Runs one step at `rate` events per second.
    func step(rate: Double, index: Int) async throws -> BenchResult {
        var configuration = base
        configuration.rate = rate
        let populating = configuration.populateRate == nil ? 0 : configuration.instances
        let first = nextRequest.withLock { next in
            defer { next += UInt64(configuration.totalEvents + populating) }
            return next
        }
        let prefix = "\(runTag)-\(index)"
        var population: BenchPopulation.Outcome?
        if let populateRate = configuration.populateRate {
            population = try await BenchPopulation(runner: self, configuration: configuration).run(
                firstRequest: first + UInt64(configuration.totalEvents), prefix: prefix, rate: populateRate
            )
        }
        let startMicros = BenchClock.wallMicros() + 300_000
        let plan = LoadPlan(firstRequest: first, configuration: configuration, startMicros: startMicros, prefix: prefix)
        recorder.begin(plan)
        try await connections.watch(seconds: UInt32(configuration.warmup + configuration.duration) + 300)

        let monitor = StepMonitor()
        let processes = target.processes
        let identity = StepMonitor.Identity(run: runTag, step: index)
        let monitoring = Task { [recorder, sender, live, target, dashboard] in
            await monitor.run(
                plan: plan, processes: processes, head: target.head, recorder: recorder, sender: sender, live: live,
                dashboard: dashboard, identity: identity
            )
        }
        let maxOverrun = min(10, max(2, configuration.duration))
        let report = await sender.run(
            plan: plan, payload: configuration.payload(), codec: configuration.payloadCodec,
            sockets: connections.emitters, loop: connections.loop, tick: UInt64(configuration.sendTick), maxOverrun: maxOverrun, stop: stop,
            recordSendTimes: configuration.traceEvery != nil
        )
        // Every emit is answered within the node's emit timeout (10 s): ordered, or an error.
        let answerDeadline = ContinuousClock.now + .seconds(15)
        while recorder.answered < report.sent, ContinuousClock.now < answerDeadline, !stop.isSet {
            try? await Task.sleep(for: .milliseconds(20))
        }

        let outcome0 = recorder.outcome()
        // The population's events count as the step's for the end check: every instance's count
        // holds both.
        var unknown = (0..<plan.instances).map {
            report.sentPerInstance[$0] - outcome0.acknowledgedPerInstance[$0] - outcome0.refusedPerInstance[$0]
        }
        var acknowledged = outcome0.acknowledgedPerInstance
        if let population {
            for instance in 0..<plan.instances {
                acknowledged[instance] += population.acknowledgedPerInstance[instance]
                unknown[instance] += population.unknownPerInstance[instance]
            }
        }
        let check = stop.isSet
            ? EndCheck.Outcome(converged: false, lost: 0, duplicated: 0, effectsMissing: 0, problems: ["interrupted"])
            : await EndCheck(
                target: target, addresses: plan.addresses, acknowledged: acknowledged, unknown: unknown, effects: configuration.effects,
                idle: population == nil ? [] : report.sentPerInstance.map { $0 == 0 }
            ).run()
        // Every node has applied the head now; let the last PROGRESS reports arrive.
        let resolveDeadline = ContinuousClock.now + .seconds(2)
        while recorder.appliedPending > 0, ContinuousClock.now < resolveDeadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        monitor.finish()
        await monitoring.value
        let outcome = recorder.outcome()
        var result = assemble(configuration: configuration, plan: plan, report: report, outcome: outcome, samples: monitor.result, check: check)
        if let population {
            result.population = population.figures
            if !population.problems.isEmpty {
                result.problems += population.problems.map { "population: \($0)" }
                result.passed = false
            }
        }
        if let every = configuration.traceEvery, let directory = target.traceDirectory {
            try? await Task.sleep(for: .milliseconds(1_500))  // every process flushes its trace each second
            var bench: [UInt64: HopBreakdown.BenchSide] = [:]
            for (seq, event) in recorder.traced {
                bench[seq] = .init(intended: plan.intended(event.index), sent: report.sentAt?[event.index] ?? 0, answered: event.arrival)
            }
            result.hops = HopBreakdown.make(directory: directory, every: every, bench: bench)
            HopBreakdown.writeBenchSide(bench, to: directory)
        }
        dashboard?.report(
            BenchLive(
                run: runTag, step: index, phase: .done, elapsed: (Double(BenchClock.wallMicros() &- plan.startMicros) / 1e5).rounded() / 10,
                rate: rate, offered: plan.count, sent: report.sent, acknowledged: outcome.acknowledged,
                orderedPerSecond: Int(result.throughput.ordered), appliedPerSecond: Int(result.throughput.applied.values.min() ?? 0),
                lag: result.throughput.lagAtWindowEnd, ordered: result.latency.ordered.live, applied: result.latency.applied.live,
                passed: result.passed
            )
        )
        return result
    }

    private func assemble(
        configuration: BenchConfiguration,
        plan: LoadPlan,
        report: OpenLoopSender.Report,
        outcome: LatencyRecorder.Outcome,
        samples: StepMonitor.Samples,
        check: EndCheck.Outcome
    ) -> BenchResult {
        let window = plan.windowSeconds
        // Sampled at the window's edges (to 50 ms): the span actually covered.
        let measured = max(0.001, Double(samples.windowEndMicros &- samples.windowStartMicros) / 1e6)
        var applied: [String: Double] = [:]
        for (node, endpoint) in target.nodes.enumerated() {
            guard node < samples.appliedAtWindowEnd.count, node < samples.appliedAtWindowStart.count else { continue }
            let delta = samples.appliedAtWindowEnd[node] &- samples.appliedAtWindowStart[node]
            applied[endpoint.name] = (Double(delta) / measured).rounded()
        }
        let sendSeconds = Double(plan.count) / plan.rate + report.overrunSeconds
        let throughput = BenchResult.Throughput(
            offered: plan.rate,
            sent: (Double(report.sent) / sendSeconds).rounded(),
            ordered: (Double(outcome.acknowledgedInWindow) / window).rounded(),
            orderedEntries: (Double(samples.headAtWindowEnd &- samples.headAtWindowStart) / measured).rounded(),
            applied: applied,
            lagAtWindowEnd: samples.appliedAtWindowEnd.map { samples.headAtWindowEnd &- min(samples.headAtWindowEnd, $0) }.max() ?? 0
        )
        let latency = BenchResult.Latencies(ordered: LatencySummary(outcome.ordered), applied: LatencySummary(outcome.applied))

        var resources: [String: ProcessResources] = [:]
        for (name, end) in samples.atWindowEnd {
            let start = samples.atWindowStart[name]?.cpuSeconds ?? 0
            let cpu = max(0, end.cpuSeconds - start)
            let switches = end.contextSwitches &- (samples.atWindowStart[name]?.contextSwitches ?? end.contextSwitches)
            let events = Double(samples.headAtWindowEnd &- samples.headAtWindowStart)
            resources[name] = ProcessResources(
                pid: target.processes.pid(of: name) ?? 0,
                cpuSeconds: (cpu * 100).rounded() / 100,
                cpuPercent: (cpu / measured * 1_000).rounded() / 10,
                peakRSSBytes: end.peakRSSBytes,
                switchesPerEvent: events > 0 ? (Double(switches) / events * 100).rounded() / 100 : nil,
                threads: end.threads
            )
        }
        var memory: [String: MemoryTrend] = [:]
        for (name, series) in samples.rss where name.hasPrefix("node") && !series.isEmpty {
            memory[name] = MemoryTrend(firstBytes: series[0], lastBytes: series[series.count - 1], maxBytes: series.max() ?? 0, samples: series)
        }
        let unanswered = report.sent - outcome.answered
        var problems = check.problems
        if outcome.appliedPending > 0 { problems.append("\(outcome.appliedPending) acknowledged events were never seen applied on every node") }
        return BenchResult(
            config: configuration,
            machine: machine,
            throughput: throughput,
            latency: latency,
            baseline: baseline,
            ratios: baseline.map { ratios(baseline: $0, throughput: throughput, latency: latency) },
            resources: resources,
            memory: memory,
            counts: .init(
                offered: plan.count, sent: report.sent, acknowledged: outcome.acknowledged, refused: outcome.refused,
                unanswered: unanswered, errors: outcome.errors, measured: Int(outcome.applied.totalCount), alarms: target.head.divergences
            ),
            converged: check.converged,
            lost: check.lost,
            duplicated: check.duplicated,
            effectsMissing: check.effectsMissing,
            passed: check.passed && outcome.appliedPending == 0,
            problems: problems
        )
    }

    private func ratios(baseline: BaselineResult, throughput: BenchResult.Throughput, latency: BenchResult.Latencies) -> BenchResult.Ratios {
        func ratio(_ value: Double, _ base: Double) -> Double { base > 0 ? (value / base * 10_000).rounded() / 10_000 : 0 }
        return BenchResult.Ratios(
            orderedToPubSub: ratio(throughput.ordered, baseline.pubsubMsgsPerSecond),
            appliedToPubSub: ratio(throughput.applied.values.min() ?? 0, baseline.pubsubMsgsPerSecond),
            appliedP50ToRTT: ratio(Double(latency.applied.p50), baseline.rttMicros.p50),
            appliedP99ToRTT: ratio(Double(latency.applied.p99), baseline.rttMicros.p99),
            orderedP50ToRTT: ratio(Double(latency.ordered.p50), baseline.rttMicros.p50)
        )
    }
}
