@_spi(Wire) import FlowKitCluster
import FlowKitCommands
import FlowKitProcesses
import Foundation
import Logging
import Synchronization
import ZeroMQ

/// `flowkit chaos --slow-consumer`: the cluster's throughput with and without monitors that stop
/// reading, in the same run, in alternating phases that start and end with a baseline. Each
/// stalled phase is compared with the mean of the baselines on either side of it, so a drift
/// during the run (a shared machine; the ledger's state, and so its snapshots and digests, growing
/// with every record) cancels out; the result is the median of those ratios.
///
/// The stalled monitors are a SUB socket of this process subscribed to everything and never read,
/// and a `flowkit monitor` child stopped with SIGSTOP. Each "stalled" phase connects them afresh
/// (so their queues fill during the phase) and removes them at its end.
struct SlowConsumerBench: Sendable {
    struct Phase: Sendable, Codable {
        var stalled: Bool
        var seconds: Double
        var acknowledgedPerSecond: Double
        /// The highest RSS of each process during the phase.
        var peakRSS: [String: Int]
        /// CPU seconds the cluster's processes (coordinator and nodes) used during the phase.
        var clusterCPUSeconds: Double

        /// The cluster's work per acknowledged event: CPU milliseconds per 1,000 events.
        var cpuPerThousand: Double {
            let acknowledged = acknowledgedPerSecond * seconds
            return acknowledged > 0 ? clusterCPUSeconds * 1_000_000 / acknowledged : 0
        }
    }

    struct Result: Sendable, Codable {
        var phases: [Phase]
        var baselinePerSecond: Double
        var stalledPerSecond: Double
        /// The median, over stalled phases, of the phase's throughput over the mean of the
        /// baselines either side of it.
        var ratio: Double
        /// Each stalled phase's ratio, in order.
        var ratios: [Double]
        /// The median, over stalled phases, of the cluster's CPU per acknowledged event over the
        /// mean of the baselines either side: what the stall costs in work, which the
        /// throughput (bound by the disk's syncs, and as noisy) shows only through that noise.
        var cpuRatio: Double
        var cpuRatios: [Double]
        var memory: [String: ProcessMemory.Samples]
        var converged: Bool
        var audit: LedgerAudit.Result

        var text: String {
            var lines = ["slow consumer: throughput with and without stalled monitors (same run, alternating phases)", ""]
            lines.append("phase        seconds   acknowledged/s   cluster CPU ms per 1,000   coordinator peak RSS")
            for phase in phases {
                lines.append(
                    (phase.stalled ? "stalled" : "baseline").padding(toLength: 13, withPad: " ", startingAt: 0)
                        + String(format: "%7.1f   %14.0f   %24.0f   ", phase.seconds, phase.acknowledgedPerSecond, phase.cpuPerThousand)
                        + ProcessMemory.mebibytes(phase.peakRSS["coordinator"] ?? 0)
                )
            }
            lines.append("")
            lines.append(
                String(format: "baseline %.0f/s, stalled %.0f/s; each stalled phase against its neighbouring baselines: ", baselinePerSecond, stalledPerSecond)
                    + ratios.map { String(format: "%.3f", $0) }.joined(separator: ", ")
                    + String(format: "; median %.3f (%.1f%% ", ratio, abs(1 - ratio) * 100) + (ratio >= 1 ? "faster)" : "slower)")
            )
            lines.append(
                "cluster CPU per acknowledged event, each stalled phase against its neighbouring baselines: "
                    + cpuRatios.map { String(format: "%.3f", $0) }.joined(separator: ", ")
                    + String(format: "; median %.3f (%.1f%% ", cpuRatio, abs(1 - cpuRatio) * 100) + (cpuRatio > 1 ? "more work)" : "less work)")
            )
            lines.append("memory (first → peak → last): " + memory.sorted { $0.key < $1.key }.map {
                "\($0.key) \(ProcessMemory.mebibytes($0.value.first)) → \(ProcessMemory.mebibytes($0.value.peak)) → \(ProcessMemory.mebibytes($0.value.last))"
            }.joined(separator: "; "))
            lines.append("converged with equal digests: \(converged ? "yes" : "NO"); ledger: \(audit.acknowledged) acknowledged, \(audit.lost) lost, \(audit.duplicated) duplicated")
            return lines.joined(separator: "\n")
        }
    }

    let nodes: Int
    let rounds: Int
    let phaseSeconds: Double
    let workersPerNode: Int
    let logger: Logger

    func run(directory: String) async throws -> Result {
        let cluster = try await LoopbackChaosCluster.start(directory: directory, nodes: nodes, durability: "synced", nodeArguments: [])
        do {
            let result = try await measure(cluster, directory: directory)
            await cluster.stop()
            return result
        } catch {
            await cluster.stop()
            throw error
        }
    }

    private func measure(_ cluster: LoopbackChaosCluster, directory: String) async throws -> Result {
        let endpoints = await cluster.endpoints()
        var clients: [UInt32: ClusterClient] = [:]
        for (id, endpoint) in endpoints.nodes { clients[id] = try await ClusterClient(endpoint: endpoint, timeout: .seconds(10), logger: logger) }
        let load = ChaosLoad(run: "s\(Int(Date().timeIntervalSince1970))", instances: 64)
        load.start(clients: clients, workersPerNode: workersPerNode, rate: nil, seed: 1)
        try await Task.sleep(for: .seconds(3))
        let overall = Mutex(ProcessMemory())
        let phaseMemory = Mutex(ProcessMemory())
        let sampler = Task {
            while !Task.isCancelled {
                let pids = await cluster.processes()
                overall.withLock { $0.sample(pids) }
                phaseMemory.withLock { $0.sample(pids) }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        var phases: [Phase] = []
        for round in 0..<(rounds * 2 + 1) {
            let stalled = round % 2 == 1
            let consumers = stalled ? try await StalledConsumers.start(publish: endpoints.publish, clusterDirectory: directory, logger: logger) : nil
            phaseMemory.withLock { $0.reset() }
            let pids = await cluster.processes()
            let cpuBefore = pids.compactMapValues(ProcessMemory.cpuSeconds)
            let before = load.acknowledgedSoFar
            let started = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(Int(phaseSeconds * 1_000)))
            let elapsed = (ContinuousClock.now - started).inSeconds
            let rate = Double(load.acknowledgedSoFar - before) / elapsed
            // Processes that ran the whole phase; none restarts in this bench.
            let cpu = pids.reduce(0.0) { total, process in
                guard let start = cpuBefore[process.key], let end = ProcessMemory.cpuSeconds(process.value) else { return total }
                return total + (end - start)
            }
            phases.append(
                Phase(
                    stalled: stalled, seconds: elapsed, acknowledgedPerSecond: rate,
                    peakRSS: phaseMemory.withLock { $0.processes.mapValues(\.peak) }, clusterCPUSeconds: cpu
                )
            )
            printError("  \(stalled ? "stalled " : "baseline") phase: \(Int(rate)) acknowledged/s")
            await consumers?.stop()
        }
        sampler.cancel()
        await load.stop()
        let probe = try await ClusterProbe.connect(endpoints.nodes, logger: logger)
        let quiescence = await probe.waitQuiescent(timeout: .seconds(60))
        await probe.close()
        let audit = try await LedgerAudit(addresses: load.addresses, logger: logger).run(
            acknowledged: load.acknowledged, failedIDs: load.failedIDs, nodes: endpoints.nodes, syncEndpoint: endpoints.sync, head: quiescence.head
        )
        for client in clients.values { await client.close() }
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        let baseline = mean(phases.filter { !$0.stalled }.map(\.acknowledgedPerSecond))
        let stalledRate = mean(phases.filter(\.stalled).map(\.acknowledgedPerSecond))
        // Phases go baseline, stalled, baseline, …, baseline: stalled phase k sits between
        // baselines k and k + 1.
        func ratiosToNeighbours(_ measure: (Phase) -> Double) -> [Double] {
            stride(from: 1, to: phases.count - 1, by: 2).map { index in
                let around = (measure(phases[index - 1]) + measure(phases[index + 1])) / 2
                return around > 0 ? measure(phases[index]) / around : 0
            }
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        }
        let ratios = ratiosToNeighbours(\.acknowledgedPerSecond)
        let cpuRatios = ratiosToNeighbours(\.cpuPerThousand)
        return Result(
            phases: phases, baselinePerSecond: baseline, stalledPerSecond: stalledRate, ratio: median(ratios), ratios: ratios,
            cpuRatio: median(cpuRatios), cpuRatios: cpuRatios,
            memory: overall.withLock { $0.processes }, converged: quiescence.converged, audit: audit
        )
    }
}

/// Monitors that stop reading: a SUB socket never read, and a `flowkit monitor` process stopped
/// with SIGSTOP once it has subscribed.
struct StalledConsumers: Sendable {
    let context: ZMQContext
    let socket: AsyncSocket
    let loop: IOLoop
    let monitor: ChildProcess

    static func start(publish: String, clusterDirectory: String, logger: Logger) async throws -> StalledConsumers {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "stalled-sub", logger: logger)
        let socket = try await loop.open(.sub) { socket in
            try socket.subscribe(EntriesMessage.batchTopic)
            try socket.subscribe(ControlTopic.heartbeat)
            try socket.connect(publish)
        }
        let monitor = try ChildProcess.spawn(
            arguments: ["monitor", "--cluster-dir", clusterDirectory, "--json"],
            name: "stalled-monitor",
            directory: clusterDirectory,
            whenParentDies: .stopsGracefully
        )
        try await Task.sleep(for: .milliseconds(500))
        monitor.signal(SIGSTOP)
        return StalledConsumers(context: context, socket: socket, loop: loop, monitor: monitor)
    }

    func stop() async {
        await monitor.kill9()
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
