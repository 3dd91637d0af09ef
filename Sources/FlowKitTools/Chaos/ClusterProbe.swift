import FlowKitCluster
import Logging

/// Asks every node how far it has got (STATUS) through clients of its own with a short timeout,
/// so a dead or paused node costs a probe little, and the load's clients are never in the way.
struct ClusterProbe: Sendable {
    let clients: [UInt32: ClusterClient]

    static func connect(_ endpoints: [UInt32: String], timeout: Duration = .seconds(2), logger: Logger) async throws -> ClusterProbe {
        var clients: [UInt32: ClusterClient] = [:]
        for (id, endpoint) in endpoints {
            clients[id] = try await ClusterClient(endpoint: endpoint, timeout: timeout, logger: logger)
        }
        return ClusterProbe(clients: clients)
    }

    /// The status of every node that answered.
    func statuses() async -> [UInt32: NodeStatus] {
        await withTaskGroup(of: (UInt32, NodeStatus?).self) { group in
            for (id, client) in clients {
                group.addTask { (id, try? await client.status()) }
            }
            var result: [UInt32: NodeStatus] = [:]
            for await (id, status) in group {
                if let status { result[id] = status }
            }
            return result
        }
    }

    /// Waits until every node answers, is connected and has applied at least `head`.
    ///
    /// - Returns: How long that took, or `nil` if it did not happen within `timeout`.
    func waitCaughtUp(to head: UInt64, since start: ContinuousClock.Instant, timeout: Duration) async -> Duration? {
        let deadline = start + timeout
        while ContinuousClock.now < deadline {
            let statuses = await statuses()
            if statuses.count == clients.count, statuses.values.allSatisfy({ $0.connected && $0.applied >= head }) {
                return ContinuousClock.now - start
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// The end state of a run: every node has nothing left to submit, has applied everything the
    /// coordinator ordered, and all hold the same digest; twice in a row, so nothing was moving.
    struct Quiescence: Sendable {
        var converged: Bool
        var statuses: [UInt32: NodeStatus]
        var waited: Duration

        var head: UInt64 { statuses.values.map(\.applied).max() ?? 0 }
        var digests: Set<String> { Set(statuses.values.map(\.digest)) }
    }

    func waitQuiescent(timeout: Duration) async -> Quiescence {
        let start = ContinuousClock.now
        var previous: [UInt32: NodeStatus] = [:]
        var last: [UInt32: NodeStatus] = [:]
        while ContinuousClock.now - start < timeout {
            last = await statuses()
            let settled = last.count == clients.count
                && last.values.allSatisfy { $0.connected && $0.pendingSubmissions == 0 && $0.applied == $0.knownHead }
                && Set(last.values.map(\.applied)).count == 1
                && Set(last.values.map(\.digest)).count == 1
            if settled, previous.mapValues(\.applied) == last.mapValues(\.applied) {
                return Quiescence(converged: true, statuses: last, waited: ContinuousClock.now - start)
            }
            previous = settled ? last : [:]
            try? await Task.sleep(for: .milliseconds(300))
        }
        return Quiescence(converged: false, statuses: last, waited: ContinuousClock.now - start)
    }

    func close() async {
        for client in clients.values { await client.close() }
    }
}
