import FlowKitCluster
import FlowKitCommands
import Foundation
import Logging
import Synchronization

/// What one `flowkit fuzz` run is asked to do.
struct FuzzConfiguration: Sendable {
    var messages = 100_000
    var targets = FuzzTarget.allCases
    var seed: UInt64 = 1
    var rate: Double = 200
    /// How far any process's RSS may rise above where it was before the fuzzing began.
    var growthLimitBytes = 256 << 20
    /// Random submissions sent to both walls, after every limit and field edge once; with 0 only
    /// those are.
    var wallCases = 1_000
    /// Subscription bytes the long-subscription probe sends (in 4 topics); 0 skips it.
    var longSubscriptionBytes = 16 << 20
    var directory: String?
    var keep = false
    var quiet = false
}

/// One fuzz run: a cluster under a valid ledger load, each socket fuzzed in turn, then the end
/// check. See `flowkit fuzz --help`.
struct FuzzSession: Sendable {
    let configuration: FuzzConfiguration
    let logger: Logger
    let stop: StopFlag

    /// Reasons an ERROR can carry for a message that was not malformed (the load's own refusals
    /// land here too), so replies and counters are compared for the other reasons only.
    static let uncompared: Set<String> = ["overloaded", "coordinator_unavailable", "internal_error", "not_found"]

    func run() async throws -> FuzzReport {
        let directory = try configuration.directory ?? ChaosSession.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let cluster = try await LoopbackChaosCluster.start(directory: directory, nodes: 3, durability: "synced", nodeArguments: [])
        let report: FuzzReport
        do {
            report = try await run(cluster, directory: directory)
        } catch {
            await cluster.stop()
            throw error
        }
        await cluster.stop()
        if report.passed, !configuration.keep, configuration.directory == nil {
            try? FileManager.default.removeItem(atPath: directory)
        }
        return report
    }

    /// Every limit and field edge, then random combinations, at both walls.
    private func checkWalls(nodeEndpoint: String, submitEndpoint: String) async -> WallAgreement.Result {
        var random = SeededRandom(seed: configuration.seed).derived("walls")
        let limit = AdmissionLimits.defaultMaxEventBytes
        let cases = WallCases.boundaries(maxEventBytes: limit, frameLimit: Int(TransportOptions().maxMessageBytes))
            + (0..<configuration.wallCases).map { _ in WallCases.random(&random, maxEventBytes: limit) }
        if !configuration.quiet {
            printError("sending \(cases.count) submissions to both walls (node-1's client socket and the coordinator's submit socket)…")
        }
        let result = await WallAgreement(nodeEndpoint: nodeEndpoint, submitEndpoint: submitEndpoint, cases: cases, session: random.next()).run()
        if !configuration.quiet {
            printError("  \(result.comparedAtBothWalls) at both walls, \(result.coordinatorOnly) at the coordinator only, in \(String(format: "%.1f", result.seconds)) s: \(result.disagreements.count) disagreements")
        }
        return result
    }

    private func run(_ cluster: LoopbackChaosCluster, directory: String) async throws -> FuzzReport {
        let endpoints = await cluster.endpoints()
        var loadClients: [UInt32: ClusterClient] = [:]
        for (id, endpoint) in endpoints.nodes { loadClients[id] = try await ClusterClient(endpoint: endpoint, timeout: .seconds(10), logger: logger) }
        let probe = try await ClusterProbe.connect(endpoints.nodes, logger: logger)
        let watcher = try await HeadWatcher(publishEndpoint: endpoints.publish, logger: logger)
        let load = ChaosLoad(run: "f\(configuration.seed)-\(Int(Date().timeIntervalSince1970))", instances: 8)
        load.start(clients: loadClients, workersPerNode: 2, rate: configuration.rate, seed: configuration.seed)
        try await Task.sleep(for: .seconds(2))

        let overall = Mutex(ProcessMemory())
        let phaseMemory = Mutex(ProcessMemory())
        let sampler = Task {
            while !Task.isCancelled {
                let pids = await cluster.processes()
                overall.withLock { $0.sample(pids) }
                phaseMemory.withLock { $0.sample(pids) }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        var phases: [FuzzReport.Phase] = []
        var crashes: [String] = []
        for target in configuration.targets.sorted() where !stop.isSet {
            let metrics = target.process == "coordinator" ? endpoints.coordinatorMetrics : endpoints.nodeMetrics[target == .nodeDealer ? 1 : 2]
            guard let metrics else { throw ChaosError("\(target.process) serves no metrics") }
            let endpoint: String = switch target {
            case .nodeDealer: endpoints.nodes[1]!
            case .nodeReq: endpoints.nodes[2]!
            case .coordinatorSubmit: await cluster.cluster.file!.coordinator.submit
            case .coordinatorSync: endpoints.sync
            case .coordinatorPublish: endpoints.publish
            }
            phaseMemory.withLock { $0.reset() }
            let before = try MetricsScrape.fetch(metrics)
            let acknowledgedBefore = load.acknowledgedSoFar
            if !configuration.quiet { printError("fuzzing \(target.rawValue) (\(endpoint)) with \(configuration.messages) messages…") }
            let driver = FuzzDriver(target: target, endpoint: endpoint, count: configuration.messages, seed: configuration.seed, head: watcher.beat?.head ?? 0)
            let tally = await driver.run()
            try await Task.sleep(for: .seconds(1))
            let after = try MetricsScrape.fetch(metrics)
            let rejected = MetricsScrape.delta(after.rejected, before.rejected)
            var mismatches: [String] = []
            if target.answers {
                // Every ERROR received was counted. A REQ request abandoned unanswered (see
                // FuzzDriver) may have been refused and counted with its ERROR lost, so a phase
                // may count up to `unanswered` more than it received, and no more.
                var excess = 0
                for reason in Set(rejected.keys).union(tally.errorReplies.keys).subtracting(Self.uncompared).sorted() {
                    let (received, counted) = (tally.errorReplies[reason, default: 0], rejected[reason, default: 0])
                    if counted < received || (counted > received && tally.unanswered == 0) {
                        mismatches.append("\(reason): \(received) ERROR replies, \(counted) counted")
                    }
                    excess += max(0, counted - received)
                }
                if excess > tally.unanswered {
                    mismatches.append("\(excess) more refusals counted than ERROR replies received, but only \(tally.unanswered) requests went unanswered")
                }
            }
            crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
            let phase = FuzzReport.Phase(
                target: target, process: target.process, tally: tally, rejectedDelta: rejected,
                refusedDelta: MetricsScrape.delta(after.refused, before.refused), mismatches: mismatches,
                acknowledgedDuring: load.acknowledgedSoFar - acknowledgedBefore, memory: phaseMemory.withLock { $0.processes }
            )
            if !configuration.quiet {
                printError("  sent \(tally.sent) in \(String(format: "%.1f", tally.seconds)) s: \(tally.totalErrorReplies) ERROR, \(tally.otherReplies.values.reduce(0, +)) other answers; counted \(rejected.values.reduce(0, +)) rejections; \(phase.acknowledgedDuring) valid emits acknowledged meanwhile")
            }
            phases.append(phase)
            if !crashes.isEmpty { break }
        }
        var walls: WallAgreement.Result?
        if !stop.isSet, crashes.isEmpty {
            walls = await checkWalls(nodeEndpoint: endpoints.nodes[1]!, submitEndpoint: await cluster.cluster.file!.coordinator.submit)
            crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
        }
        try await Task.sleep(for: .seconds(2))
        sampler.cancel()
        var subscriptionProbe: LongSubscriptionProbe.Result?
        if configuration.longSubscriptionBytes > 0, !stop.isSet, let pid = await cluster.processes()["coordinator"] {
            if !configuration.quiet { printError("subscribing to 4 topics of \(ProcessMemory.mebibytes(configuration.longSubscriptionBytes / 4)) each on the publish socket…") }
            subscriptionProbe = try await LongSubscriptionProbe(
                publishEndpoint: endpoints.publish, coordinatorPid: pid, topics: 4, bytesPerTopic: configuration.longSubscriptionBytes / 4,
                directory: directory
            ).run()
            crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
        }
        await load.stop()
        let quiescence = await probe.waitQuiescent(timeout: .seconds(60))
        crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
        let audit = try await LedgerAudit(addresses: load.addresses, logger: logger).run(
            acknowledged: load.acknowledged, failedIDs: load.failedIDs, nodes: endpoints.nodes, syncEndpoint: endpoints.sync, head: quiescence.head
        )
        let alarms = Dictionary(grouping: watcher.alarms, by: \.kind.rawValue).mapValues(\.count)
        let membersListed = watcher.status?.nodes.count
        for client in loadClients.values { await client.close() }
        await probe.close()
        await watcher.close()

        let memory = overall.withLock { $0.processes }
        let grown = memory.filter { $0.value.growth > configuration.growthLimitBytes }
        var checks: [FuzzReport.Check] = [
            .init(name: "no process crashed", held: crashes.isEmpty, detail: crashes.isEmpty ? "all \(memory.count) alive" : crashes.joined(separator: "; ")),
            .init(
                name: "every refusal counted by reason",
                held: phases.allSatisfy(\.mismatches.isEmpty),
                detail: phases.flatMap { phase in phase.mismatches.map { "\(phase.target.rawValue) \($0)" } }.joined(separator: "; ")
            ),
            .init(
                name: "every answer is a FlowKit message",
                held: phases.allSatisfy { $0.tally.unreadableReplies == 0 },
                detail: "\(phases.map(\.tally.unreadableReplies).reduce(0, +)) unreadable"
            ),
            .init(
                name: "memory bounded",
                held: grown.isEmpty,
                detail: grown.isEmpty ? "peak growth ≤ \(ProcessMemory.mebibytes(configuration.growthLimitBytes))"
                    : grown.map { "\($0.key) grew \(ProcessMemory.mebibytes($0.value.growth))" }.joined(separator: "; ")
            ),
            .init(
                name: "valid emits acknowledged during every phase",
                held: phases.allSatisfy { $0.acknowledgedDuring > 0 },
                detail: phases.map { "\($0.target.rawValue) \($0.acknowledgedDuring)" }.joined(separator: ", ")
            ),
            .init(name: "nodes converged with equal digests", held: quiescence.converged, detail: "head \(quiescence.head)"),
            .init(name: "every acknowledged id once on every node", held: audit.passed, detail: "\(audit.acknowledged) ids, \(audit.lost) lost, \(audit.duplicated) duplicated"),
            .init(name: "no fuzz sender failed", held: phases.allSatisfy { $0.tally.error == nil }, detail: phases.compactMap { $0.tally.error }.joined(separator: "; ")),
        ]
        if let walls {
            let limit = max(5, walls.cases / 20)
            checks.append(.init(
                name: "both walls decide alike",
                held: walls.disagreements.isEmpty && walls.error == nil && walls.inconclusive <= limit,
                detail: walls.error ?? (walls.disagreements.isEmpty
                    ? "\(walls.comparedAtBothWalls) cases at both walls, \(walls.coordinatorOnly) only a SUBMIT carries: \(walls.admitted) admitted, "
                        + "\(walls.refusedByReason.values.reduce(0, +)) refused alike, \(walls.inconclusive) undecided (at most \(limit))"
                    : walls.disagreements.prefix(5).joined(separator: "; "))
            ))
        }
        if let probe = subscriptionProbe {
            checks.append(.init(
                name: "long subscriptions cost bounded memory",
                held: probe.coordinatorAlive && probe.growth <= configuration.growthLimitBytes,
                detail: "\(probe.topics) × \(ProcessMemory.mebibytes(probe.bytesPerTopic)) subscribed: coordinator RSS \(ProcessMemory.mebibytes(probe.rssBefore)) → "
                    + "\(ProcessMemory.mebibytes(probe.rssConnected)) → \(ProcessMemory.mebibytes(probe.rssAfter)) after the subscriber left"
            ))
        }
        return FuzzReport(
            seed: configuration.seed, messagesPerTarget: configuration.messages, phases: phases, walls: walls, subscriptionProbe: subscriptionProbe, memory: memory, audit: audit,
            finalHead: quiescence.head, alarms: alarms, membersListed: membersListed, crashes: crashes, checks: checks, directory: directory
        )
    }
}
