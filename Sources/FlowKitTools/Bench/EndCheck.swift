import FlowKitCluster
import Foundation

/// After the load stops: did every node converge, and is every acknowledged event there exactly once?
///
/// 1. Wait (bounded) until every node has applied the coordinator's head, has no submission
///    pending, no instance waiting to be hashed and (with effects) no effect running, and the head
///    has stopped moving.
/// 2. Every node's combined digest must be equal.
/// 3. Every instance's `count` on every node must lie between the events acknowledged to the bench
///    and those plus the ones whose outcome is unknown (sent, never answered or timed out). Below is
///    **lost**, above is **duplicated**. With the binary codec the bench knows exactly what it sent.
/// 4. With `--effects`, each instance's `effectsDone` must equal its `count`: every effect ran
///    exactly once in the cluster.
///
/// Steps 3 and 4 read every instance the step sent to. Instances it did not (a population's idle
/// ones, `--populate`) are read up to ``maxIdleChecked`` of them, spread evenly: a million idle
/// instances queried on every node would take minutes, and the equal digests of step 2 already
/// cover every instance's state.
struct EndCheck {
    struct Outcome: Sendable {
        var converged: Bool
        var lost: Int
        var duplicated: Int
        var effectsMissing: Int
        var problems: [String]

        var passed: Bool { converged && lost == 0 && duplicated == 0 && effectsMissing == 0 && problems.isEmpty }
    }

    let target: BenchTarget
    let addresses: [String]
    let acknowledged: [Int]
    /// Per instance: sent, but neither acknowledged nor refused.
    let unknown: [Int]
    let effects: Bool
    var timeout: Duration = .seconds(60)
    /// Instances whose events were all in a population, not in the step: the most of them read.
    var idle: [Bool] = []
    static let maxIdleChecked = 10_000

    /// The instances steps 3 and 4 read: every one the step sent to, and idle ones spread evenly.
    private var checked: [Int] {
        let idleCount = idle.filter { $0 }.count
        guard idleCount > Self.maxIdleChecked else { return Array(addresses.indices) }
        let stride = (idleCount + Self.maxIdleChecked - 1) / Self.maxIdleChecked
        var seen = 0
        return addresses.indices.filter { index in
            guard index < idle.count, idle[index] else { return true }
            defer { seen += 1 }
            return seen % stride == 0
        }
    }

    func run() async -> Outcome {
        var problems: [String] = []
        let statuses = await waitForQuiescence(problems: &problems)
        var converged = problems.isEmpty
        if let statuses, Set(statuses.map(\.digest)).count != 1 {
            converged = false
            problems.append("digests differ: " + statuses.map { "\($0.name) \($0.digest)" }.joined(separator: ", "))
        }
        var lost = 0
        var duplicated = 0
        var effectsMissing = 0
        let checked = checked
        for (node, client) in target.clients.enumerated() {
            let name = target.nodes[node].name
            let states: [(count: Int, effectsDone: Int)?]
            do {
                states = try await Self.counts(of: checked.map { addresses[$0] }, on: client)
            } catch {
                problems.append("\(name): the counts could not be read: \(error)")
                converged = false
                continue
            }
            var nodeLost = 0
            var nodeDuplicated = 0
            var nodeMissing = 0
            for (position, state) in states.enumerated() {
                let instance = checked[position]
                let count = state?.count ?? 0
                nodeLost += max(0, acknowledged[instance] - count)
                nodeDuplicated += max(0, count - acknowledged[instance] - unknown[instance])
                if effects { nodeMissing += max(0, count - (state?.effectsDone ?? 0)) }
            }
            if nodeLost > 0 { problems.append("\(name): \(nodeLost) acknowledged events missing") }
            if nodeDuplicated > 0 { problems.append("\(name): \(nodeDuplicated) events applied more often than sent") }
            if nodeMissing > 0 { problems.append("\(name): \(nodeMissing) effects never reported back") }
            lost = max(lost, nodeLost)
            duplicated = max(duplicated, nodeDuplicated)
            effectsMissing = max(effectsMissing, nodeMissing)
        }
        if target.head.divergences > 0 {
            converged = false
            problems.append("the coordinator raised \(target.head.divergences) divergence alarms: \(target.head.alarmDescriptions.prefix(3).joined(separator: "; "))")
        }
        return Outcome(converged: converged, lost: lost, duplicated: duplicated, effectsMissing: effectsMissing, problems: problems)
    }

    /// Polls the nodes until they are quiet and caught up; returns their last statuses.
    func waitForQuiescence(problems: inout [String]) async -> [NodeStatus]? {
        let deadline = ContinuousClock.now + timeout
        var previousHead: UInt64?
        var last: [NodeStatus]?
        while true {
            if let statuses = try? await target.statuses() {
                last = statuses
                let head = max(target.head.head, statuses.map(\.knownHead).max() ?? 0)
                // A digest describes every instance only once none waits to be hashed: a node that
                // settles a backlog (a step's instances) answers with the digest as it stands.
                let caughtUp = statuses.allSatisfy { $0.applied >= head && $0.pendingSubmissions == 0 && ($0.instancesUnhashed ?? 0) == 0 }
                let idle = !effects || statuses.allSatisfy { $0.runningEffects == 0 }
                if caughtUp, idle, previousHead == head { return statuses }
                previousHead = head
            }
            if ContinuousClock.now >= deadline {
                let state = last.map { $0.map { "\($0.name) applied \($0.applied) pending \($0.pendingSubmissions) effects \($0.runningEffects) unhashed \($0.instancesUnhashed ?? 0)" }.joined(separator: ", ") } ?? "no status"
                problems.append("not converged within \(timeout): head \(target.head.head); \(state)")
                return last
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// `count` and `effectsDone` of each address on one node (`nil`: no state, never written).
    static func counts(of addresses: [String], on client: ClusterClient) async throws -> [(count: Int, effectsDone: Int)?] {
        struct Counts: Decodable {
            var count: Int
            var effectsDone: Int
        }
        var results = [(count: Int, effectsDone: Int)?](repeating: nil, count: addresses.count)
        let batch = 256
        for start in stride(from: 0, to: addresses.count, by: batch) {
            let range = start..<min(addresses.count, start + batch)
            try await withThrowingTaskGroup(of: (Int, (count: Int, effectsDone: Int)?).self) { group in
                for index in range {
                    group.addTask {
                        do {
                            let state = try await client.query(addresses[index])
                            let counts = try JSONDecoder().decode(Counts.self, from: Data(state.json))
                            return (index, (counts.count, counts.effectsDone))
                        } catch let error as ProtocolError where error.code == .notFound {
                            return (index, nil)
                        }
                    }
                }
                for try await (index, counts) in group { results[index] = counts }
            }
        }
        return results
    }
}
