import FlowKitCluster
import Foundation

/// The kinds of fault `flowkit chaos` injects.
enum FaultKind: String, CaseIterable, Codable, Sendable, Comparable {
    /// `kill -9` a random node, then start it again on the same endpoint and data directory.
    case nodeKill = "node-kill"
    /// `kill -9` a random node and leave it down past the coordinator's node timeout (5-8 s)
    /// before starting it again: its effects are taken over by the lease, not by its restart.
    case nodeDown = "node-down"
    /// `kill -9` the coordinator, then start it again on the same endpoints and log.
    case coordinatorKill = "coordinator-kill"
    /// SIGSTOP a random node for a while, then SIGCONT: a node that hangs (GC pause, swap, debugger).
    case nodePause = "node-pause"
    /// SIGUSR1 to a random node: it drops and remakes its connections to the coordinator.
    case connectionDrop = "connection-drop"
    /// Cut a random node off the network (its namespace's link down), then reconnect it.
    case partition = "partition"
    /// Make a random node's link slow and lossy for a while (`tc netem`, or a `tbf` rate limit
    /// where the kernel lacks netem).
    case slowLink = "slow-link"

    /// Whether this kind needs the network namespaces of `--partitions`.
    var needsNamespaces: Bool { self == .partition || self == .slowLink }

    static func < (lhs: FaultKind, rhs: FaultKind) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Parses `node-kill,pause,…`; `all` is every kind the run can inject.
    static func parseList(_ text: String, partitions: Bool) throws -> [FaultKind] {
        if text == "all" { return allCases.filter { partitions || !$0.needsNamespaces } }
        var kinds: [FaultKind] = []
        for name in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            guard let kind = FaultKind(rawValue: name) else {
                throw ChaosError("unknown fault kind \(name); the kinds are \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if kind.needsNamespaces, !partitions {
                throw ChaosError("the \(name) fault needs network namespaces: add --partitions (root, ip netns)")
            }
            if !kinds.contains(kind) { kinds.append(kind) }
        }
        guard !kinds.isEmpty else { throw ChaosError("--kinds names no fault") }
        return kinds
    }
}

/// Which fault comes when: `count` faults spread over the run, each kind in turn in a shuffled
/// order (so a short run still injects every kind), each at a jittered time.
struct FaultPlan: Sendable {
    struct Step: Sendable {
        /// Seconds after the start of the load.
        var at: Double
        var kind: FaultKind
    }

    let steps: [Step]

    init(kinds: [FaultKind], count: Int, duration: Double, random: inout SeededRandom) {
        var order: [FaultKind] = []
        while order.count < count {
            order += kinds.shuffled(using: &random)
        }
        order = Array(order.prefix(count))
        // The first fault after a short warm-up, the last leaving time to converge.
        let warmup = min(3, duration * 0.1)
        let slot = count > 0 ? (duration - warmup) / Double(count) : 0
        steps = order.enumerated().map { index, kind in
            let jitter = Double.random(in: 0...0.3, using: &random) * slot
            return Step(at: warmup + Double(index) * slot + jitter, kind: kind)
        }
    }
}

/// A chaos run that could not be set up or carried out (distinct from an invariant that failed).
struct ChaosError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
