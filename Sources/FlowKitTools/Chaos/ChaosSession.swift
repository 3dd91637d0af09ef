import FlowKitCluster
import FlowKitCommands
import Foundation
import Logging
import Synchronization

/// What one `flowkit chaos` run is asked to do.
struct ChaosConfiguration: Sendable {
    var nodes = 3
    var duration: Double = 60
    var faults = 10
    var kinds: [FaultKind] = [.nodeKill, .coordinatorKill, .nodePause, .connectionDrop]
    var seed: UInt64 = 1
    var partitions = false
    var workersPerNode = 2
    var rate: Double? = 400
    var instances = 8
    var durability = "synced"
    var convergeTimeout: Duration = .seconds(60)
    var directory: String?
    var keep = false
    var quiet = false
}

/// One chaos run: a cluster under a ledger load, faults injected one after another, then the
/// end check. See `flowkit chaos --help`.
struct ChaosSession: Sendable {
    let configuration: ChaosConfiguration
    let logger: Logger
    let stop: StopFlag

    func run() async throws -> ChaosReport {
        let directory = try configuration.directory ?? Self.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let nodeArguments = ["--snapshot-ms", "1000"]
        let cluster: any ChaosCluster = configuration.partitions
            ? try await NamespaceChaosCluster.start(directory: directory, nodes: configuration.nodes, durability: configuration.durability, nodeArguments: nodeArguments)
            : try await LoopbackChaosCluster.start(directory: directory, nodes: configuration.nodes, durability: configuration.durability, nodeArguments: nodeArguments)
        let report: ChaosReport
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

    private func run(_ cluster: any ChaosCluster, directory: String) async throws -> ChaosReport {
        let endpoints = await cluster.endpoints()
        var random = SeededRandom(seed: configuration.seed)
        let plan = FaultPlan(kinds: configuration.kinds, count: configuration.faults, duration: configuration.duration, random: &random)
        var loadClients: [UInt32: ClusterClient] = [:]
        for (id, endpoint) in endpoints.nodes { loadClients[id] = try await ClusterClient(endpoint: endpoint, timeout: .seconds(6), logger: logger) }
        let probe = try await ClusterProbe.connect(endpoints.nodes, logger: logger)
        let watcher = try await HeadWatcher(publishEndpoint: endpoints.publish, logger: logger)
        let memory = Mutex(ProcessMemory())
        let sampler = Task {
            while !Task.isCancelled {
                let pids = await cluster.processes()
                memory.withLock { $0.sample(pids) }
                try? await Task.sleep(for: .seconds(1))
            }
        }
        let run = "c\(configuration.seed)-\(Int(Date().timeIntervalSince1970))"
        let timers = ChaosTimers(run: run, nodes: Array(endpoints.nodes.keys), logger: logger)
        try await timers.start(clients: loadClients)
        let load = ChaosLoad(run: run, instances: configuration.instances)
        load.start(clients: loadClients, workersPerNode: configuration.workersPerNode, rate: configuration.rate, seed: configuration.seed)
        let started = ContinuousClock.now
        let injector = FaultInjector(cluster: cluster, probe: probe, watcher: watcher, convergeTimeout: configuration.convergeTimeout)
        var faults: [FaultRecord] = []
        var crashes: [String] = []
        for step in plan.steps {
            let due = started + .milliseconds(Int(step.at * 1_000))
            while ContinuousClock.now < due, !stop.isSet { try? await Task.sleep(for: .milliseconds(50)) }
            if stop.isSet { break }
            let record = await injector.inject(step.kind, at: (ContinuousClock.now - started).inSeconds, random: &random)
            progress(record, acknowledged: load.acknowledgedSoFar)
            faults.append(record)
            crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
        }
        let end = started + .milliseconds(Int(configuration.duration * 1_000))
        while ContinuousClock.now < end, !stop.isSet { try? await Task.sleep(for: .milliseconds(100)) }
        await load.stop()
        let elapsed = (ContinuousClock.now - started).inSeconds

        // Every timer still ticks wherever it runs now; then they stop, so the cluster goes quiet.
        var timerResult = ChaosTimers.Result(timers: timers.addresses.count)
        let watched = try await ClusterClient(endpoint: endpoints.nodes[endpoints.nodes.keys.min()!]!, timeout: .seconds(10), logger: logger)
        let beforeStop = await probe.statuses().values.map(\.knownHead).max() ?? 0
        (timerResult.ticking, timerResult.problems) = await timers.countTicking(client: watched, head: beforeStop, timeout: .seconds(15))
        try await timers.stop(client: watched)
        await watched.close()

        let quiescence = await probe.waitQuiescent(timeout: configuration.convergeTimeout)
        crashes += await cluster.unexpectedExits().filter { !crashes.contains($0) }
        sampler.cancel()
        let audit = try await LedgerAudit(addresses: load.addresses, logger: logger).run(
            acknowledged: load.acknowledged,
            failedIDs: load.failedIDs,
            nodes: endpoints.nodes,
            syncEndpoint: endpoints.sync,
            head: quiescence.head
        )
        try await timers.auditOwners(syncEndpoint: endpoints.sync, head: quiescence.head, faults: faults, into: &timerResult)
        let alarms = Dictionary(grouping: watcher.alarms, by: \.kind.rawValue).mapValues(\.count)
        for client in loadClients.values { await client.close() }
        await probe.close()
        await watcher.close()

        var checks: [ChaosReport.Check] = [
            .init(name: "every acknowledged id on every node", held: audit.lost == 0, detail: "\(audit.acknowledged) ids, \(audit.lost) lost"),
            .init(name: "no id twice on any node or in the log", held: audit.duplicated == 0, detail: "\(audit.duplicated) duplicated"),
            .init(name: "the log holds each id at its acknowledged seq", held: audit.misplaced == 0, detail: "\(audit.misplaced) misplaced"),
            .init(
                name: "nodes converged with equal digests",
                held: quiescence.converged,
                detail: "head \(quiescence.head), digests \(quiescence.digests.count == 1 ? "equal" : "\(quiescence.digests)") after \(ChaosReport.seconds(quiescence.waited.inSeconds))"
            ),
            .init(name: "no process crashed", held: crashes.isEmpty, detail: crashes.isEmpty ? "none" : crashes.joined(separator: "; ")),
            .init(name: "no divergence alarm", held: alarms["divergence", default: 0] == 0, detail: "\(alarms["divergence", default: 0]) alarms"),
            .init(
                name: "the cluster caught up after every fault",
                held: faults.allSatisfy { $0.convergeSeconds != nil && $0.error == nil },
                detail: faults.filter { $0.convergeSeconds == nil || $0.error != nil }.map { "\($0.kind.rawValue) at \(Int($0.at)) s: \($0.error ?? "not caught up")" }.joined(separator: "; ")
            ),
        ]
        checks.append(.init(
            name: "every tick from its timer's owner at the time",
            held: timerResult.ownersHeld,
            detail: "\(timerResult.ticks) ticks, \(timerResult.ticksFromNonOwners) from a process that did not own the timer"
        ))
        checks.append(.init(
            name: "every timer ticks at the end",
            held: timerResult.allTicking,
            detail: "\(timerResult.ticking) of \(timerResult.timers) ticking"
        ))
        checks.append(.init(name: "the load was acknowledged", held: audit.acknowledged > 0, detail: "\(audit.acknowledged) acknowledged"))
        let report = ChaosReport(
            seed: configuration.seed,
            nodes: configuration.nodes,
            seconds: elapsed,
            partitions: configuration.partitions,
            faults: faults,
            summary: ChaosReport.summarize(faults),
            load: .init(
                attempted: load.attempted,
                acknowledged: audit.acknowledged,
                failed: load.failures,
                acknowledgedPerSecond: elapsed > 0 ? Double(audit.acknowledged) / elapsed : 0
            ),
            audit: audit,
            finalHead: quiescence.head,
            finalConvergeSeconds: quiescence.converged ? quiescence.waited.inSeconds : nil,
            memory: memory.withLock { $0.processes },
            crashes: crashes,
            alarms: alarms,
            timers: timerResult,
            effectsTakenOver: watcher.effects.takeovers,
            staleSubmissionsRefused: watcher.effects.staleSubmissions,
            checks: checks,
            directory: directory
        )
        return report
    }

    private func progress(_ record: FaultRecord, acknowledged: Int) {
        guard !configuration.quiet else { return }
        let at = String(format: "%6.1f s", record.at)
        let outage = String(format: "%5.2f s", record.outage)
        printError(
            "\(at)  \(record.kind.rawValue.padding(toLength: 17, withPad: " ", startingAt: 0))\(record.target.padding(toLength: 12, withPad: " ", startingAt: 0))"
                + "outage \(outage)  caught up after \(ChaosReport.seconds(record.convergeSeconds))  (\(acknowledged) acknowledged)"
                + (record.detail.map { "  [\($0)]" } ?? "") + (record.error.map { "  error: \($0)" } ?? "")
        )
    }

    static func temporaryDirectory() throws -> String {
        var template = Array("\(NSTemporaryDirectory())/flowkit-chaos-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChaosError("cannot create a temporary directory") }
        return String(cString: made)
    }
}
