import FlowKitCluster
import Foundation

/// One fault as it happened.
struct FaultRecord: Sendable, Codable {
    var kind: FaultKind
    /// `node-2`, `coordinator`.
    var target: String
    /// Seconds after the load started.
    var at: Double
    /// When it was injected, in microseconds since the Unix epoch (the clock entries' times use).
    var startedAtMicros: UInt64 = 0
    /// Seconds from the fault until it was healed (the process restarted, resumed, reconnected).
    var outage: Double
    /// Seconds from the heal until every node was connected and had applied the head the
    /// coordinator announced after the heal; `nil` if that did not happen in time.
    var convergeSeconds: Double?
    /// How the fault was applied, where there is a choice (the link shaping used).
    var detail: String?
    /// What went wrong carrying the fault out, if anything.
    var error: String?
}

/// Carries out the faults of a ``FaultPlan`` against a ``ChaosCluster``, one at a time, and times
/// how long the cluster takes to catch up after each.
struct FaultInjector: Sendable {
    let cluster: any ChaosCluster
    let probe: ClusterProbe
    let watcher: HeadWatcher
    let convergeTimeout: Duration

    func inject(_ kind: FaultKind, at offset: Double, random: inout SeededRandom) async -> FaultRecord {
        let victim = cluster.nodeIDs.randomElement(using: &random)!
        var record = FaultRecord(
            kind: kind, target: kind == .coordinatorKill ? "coordinator" : "node-\(victim)", at: offset,
            startedAtMicros: UInt64(Date().timeIntervalSince1970 * 1_000_000), outage: 0
        )
        let started = ContinuousClock.now
        let previousEpoch = watcher.beat?.epoch
        do {
            switch kind {
            case .nodeKill, .nodeDown:
                await cluster.killNode(victim)
                try await Task.sleep(for: random.seconds(kind == .nodeKill ? 0.2...2.0 : 5.0...8.0))
                try await restart { try await cluster.startNode(victim) }
            case .coordinatorKill:
                await cluster.killCoordinator()
                try await Task.sleep(for: random.seconds(0.2...2.0))
                try await restart { try await cluster.startCoordinator() }
            case .nodePause:
                await cluster.signalNode(victim, SIGSTOP)
                try await Task.sleep(for: random.seconds(0.5...4.0))
                await cluster.signalNode(victim, SIGCONT)
            case .connectionDrop:
                await cluster.signalNode(victim, SIGUSR1)
            case .partition:
                try await cluster.setPartitioned(victim, true)
                try await Task.sleep(for: random.seconds(1.0...6.0))
                try await cluster.setPartitioned(victim, false)
            case .slowLink:
                record.detail = try await cluster.setDegraded(victim, true)
                try await Task.sleep(for: random.seconds(2.0...6.0))
                try await cluster.setDegraded(victim, false)
            }
        } catch {
            record.error = "\(error)"
        }
        let healed = ContinuousClock.now
        record.outage = (healed - started).inSeconds
        // The head the coordinator announces after the heal (in its new term, after a restart).
        let newTerm = kind == .coordinatorKill ? previousEpoch : nil
        guard let beat = await watcher.head(after: healed, notEpoch: newTerm, timeout: convergeTimeout) else {
            record.error = record.error ?? "no heartbeat from the coordinator within \(convergeTimeout) of the heal"
            return record
        }
        record.convergeSeconds = await probe.waitCaughtUp(to: beat.head, since: healed, timeout: convergeTimeout)?.inSeconds
        return record
    }

    /// Restarts a process, trying once more if the first start fails (a port still held).
    private func restart(_ start: () async throws -> Void) async throws {
        do {
            try await start()
        } catch {
            try await Task.sleep(for: .seconds(1))
            try await start()
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
