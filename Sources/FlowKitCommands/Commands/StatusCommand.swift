import ArgumentParser
@_spi(Wire) import FlowKitCluster
import Foundation
import Logging
import Synchronization

/// `flowkit status`: every node as the coordinator sees it, and whether the cluster is healthy.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the cluster: the head, every node's applied seq, lag, liveness and digest, and replicated coordinators' leader and lag.",
        discussion: """
            Exits 0 only when every node is alive, has applied the head, and reports a digest of the \
            head equal to every other node's (with no divergence this term), every replicated coordinator \
            is in sync, and with --expect-nodes \
            when that many are alive. A node down for a minute is forgotten by the coordinator. Nodes report every \
            second, so after a change the command waits up to --settle seconds for reports that \
            cover the head before it decides. Exits 6 when the cluster is not healthy by then (the \
            output says why: a node down, stalled, behind, or a digest that differs), 3 when the \
            coordinator does not answer within --timeout.
            """
    )

    @OptionGroup var target: CoordinatorTargetOptions
    @OptionGroup var curve: CurveClientOptions

    @Option(help: "The local cluster's directory, when --coordinator is not given.")
    var clusterDir = LocalClusterFile.defaultDirectory

    @Option(help: "Seconds to wait for the coordinator's first status.")
    var timeout: Double = 5

    @Option(help: "Seconds to wait, after the first status, for every node to report the head.")
    var settle: Double = 5

    @Option(help: "How many nodes the cluster should have: fewer alive is a problem. (A node down for a minute leaves the status.)")
    var expectNodes: Int?

    @Flag(help: "Print the status as JSON, with its problems.")
    var json = false

    func validate() throws {
        guard timeout > 0, settle >= 0 else { throw ValidationError("--timeout must be positive and --settle not negative") }
        guard (expectNodes ?? 1) >= 1 else { throw ValidationError("--expect-nodes must be at least 1") }
    }

    /// The status's problems, and a missing node when the caller said how many there should be.
    private func problems(_ status: ClusterStatus) -> [String] {
        var problems = status.problems
        let alive = status.nodes.filter(\.alive).count
        if let expectNodes, alive < expectNodes {
            problems.append("\(alive) of the \(expectNodes) expected nodes are alive")
        }
        return problems
    }

    func run() async throws {
        let logger = {
            var logger = Logger(label: "flowkit.status")
            logger.logLevel = .error
            return logger
        }()
        let publishEndpoints = try target.publishEndpoints(settings: try Settings(path: nil), section: "monitor", clusterDir: clusterDir)
        let (transport, serverKey) = try curve.resolve(localCluster: try? LocalClusterFile.read(directory: clusterDir)) {
            $0.curve?.coordinatorPublicKey
        }
        let monitor = try await ClusterMonitor(
            publishEndpoints: publishEndpoints, topics: [ControlTopic.status], transport: transport,
            serverPublicKey: serverKey, logger: logger
        )
        let status = await latestStatus(from: monitor)
        await monitor.close()
        guard let status else {
            printError("error: no status from the coordinator at \(publishEndpoints.joined(separator: ", ")) within \(timeout) s: is it running\(publishEndpoints.count > 1 ? ", and does one lead" : "")?")
            throw ExitCode(ExitCodes.unreachable)
        }
        let problems = problems(status)
        if json {
            printFlushed(jsonLine(StatusOutput(status: status, problems: problems)))
        } else {
            print(status, problems: problems)
        }
        if !problems.isEmpty { throw ExitCode(ExitCodes.checkFailed) }
    }

    /// The first status without problems, or the last one by the settle deadline; `nil` when none
    /// came within the timeout.
    private func latestStatus(from monitor: ClusterMonitor) async -> ClusterStatus? {
        let events = monitor.events
        let latest = LatestStatus()
        let waiter = Task {
            var settleDeadline: ContinuousClock.Instant?
            for try await event in events {
                guard case .status(let status) = event else { continue }
                latest.value.withLock { $0 = status }
                let deadline = settleDeadline ?? .now.advanced(by: .milliseconds(Int(settle * 1_000)))
                settleDeadline = deadline
                if problems(status).isEmpty || ContinuousClock.now >= deadline { return }
            }
        }
        // No status within the timeout: the coordinator is unreachable. Otherwise the wait ends at
        // the settle deadline at the latest, with the last status seen.
        let timer = Task {
            try await Task.sleep(for: .milliseconds(Int(timeout * 1_000)))
            if latest.value.withLock({ $0 }) != nil { try await Task.sleep(for: .milliseconds(Int(settle * 1_000))) }
            waiter.cancel()
        }
        _ = await waiter.result
        timer.cancel()
        return latest.value.withLock { $0 }
    }

    /// ` (at rest 990, unhashed 3)`: what a node's instances are doing, when it said.
    static func instancesDetail(_ node: ClusterStatus.Node) -> String {
        var parts: [String] = []
        if let resting = node.instancesAtRest { parts.append("at rest \(resting)") }
        if let unhashed = node.instancesUnhashed, unhashed > 0 { parts.append("unhashed \(unhashed)") }
        return parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"
    }

    private func print(_ status: ClusterStatus, problems: [String]) {
        printFlushed(
            "epoch \(status.epoch)  head \(status.head)  first seq \(status.firstSeq)  \(Int(status.entriesPerSecond)) entries/s  divergences \(status.divergences)"
                + (status.quarantined > 0 ? "  QUARANTINED entries \(status.quarantined)" : "")
                + "  takeovers \(status.takeovers ?? 0)  stale submissions refused \(status.staleSubmissions ?? 0)"
        )
        if let replication = status.replication {
            for line in MonitorView.describe(replication, now: Date()) { printFlushed(line) }
        }
        for line in MonitorView.describe(status.versions ?? [:]) { printFlushed(line) }
        for node in status.nodes {
            let state = !node.alive ? "DOWN   " : node.unreadable != nil ? "UPGRADE" : node.stalled ? "STALLED" : "alive  "
            let position = node.lag == 0 ? "at head" : "lag \(node.lag)"
            let digest = node.digestSeq == 0 ? "digest \(node.digest.prefix(16)) (not current)" : "digest \(node.digest.prefix(16)) at \(node.digestSeq)"
            printFlushed(
                "\(node.name)  \(state)  applied \(node.applied)  \(position)  \(digest)  instances \(node.instances)\(Self.instancesDetail(node))  effects \(node.runningEffects) (owns \(node.ownedInstances ?? 0))  session \(node.session.map { String($0.prefix(8)) } ?? "-")  \(node.clientEndpoint)"
            )
        }
        if problems.isEmpty {
            printFlushed("healthy: every node is at the head with the same digest")
        } else {
            for problem in problems { printFlushed("problem: \(problem)") }
        }
    }
}

/// `flowkit status --json`: the coordinator's status, with what keeps it from being healthy
/// (docs/DASHBOARD.md lists every field).
package struct StatusOutput: Encodable {
    package var status: ClusterStatus
    package var problems: [String]

    package init(status: ClusterStatus, problems: [String]) {
        self.status = status
        self.problems = problems
    }

    private enum CodingKeys: String, CodingKey {
        case healthy, problems
    }

    package func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(problems.isEmpty, forKey: .healthy)
        try container.encode(problems, forKey: .problems)
    }
}

/// The last status seen, shared by the task that reads and the one that keeps time.
private final class LatestStatus: Sendable {
    let value = Mutex<ClusterStatus?>(nil)
}
