import ArgumentParser
import FlowKitCluster
import Foundation
import Logging

/// `flowkit status`: every node as the coordinator sees it.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the cluster: the head, and every node's applied seq, lag, liveness and digest.",
        discussion: "Exits 0 when every node is alive and agrees on the digest at the head, 6 otherwise, 3 when the coordinator does not answer."
    )

    @OptionGroup var target: CoordinatorTargetOptions
    @OptionGroup var curve: CurveClientOptions

    @Option(help: "The local cluster's directory, when --coordinator is not given.")
    var clusterDir = LocalClusterFile.defaultDirectory

    @Option(help: "Seconds to wait for the coordinator's status.")
    var timeout: Double = 5

    @Flag(help: "Print the status as JSON.")
    var json = false

    func run() async throws {
        let logger = {
            var logger = Logger(label: "flowkit.status")
            logger.logLevel = .error
            return logger
        }()
        let endpoints = try target.endpoints(settings: try Settings(path: nil), section: "monitor", clusterDir: clusterDir)
        let (transport, serverKey) = try curve.resolve(localCluster: try? LocalClusterFile.read(directory: clusterDir)) {
            $0.curve?.coordinatorPublicKey
        }
        let monitor = try await ClusterMonitor(
            publishEndpoint: endpoints.publish, topics: [ControlTopic.status], transport: transport,
            serverPublicKey: serverKey, logger: logger
        )
        let events = monitor.events
        let waiter = Task { () -> ClusterStatus? in
            for try await event in events { if case .status(let status) = event { return status } }
            return nil
        }
        let timer = Task {
            try await Task.sleep(for: .milliseconds(Int(timeout * 1_000)))
            waiter.cancel()
        }
        let status = try? await waiter.value
        timer.cancel()
        await monitor.close()
        guard let status else {
            printError("error: no status from the coordinator at \(endpoints.publish) within \(timeout) s: is it running?")
            throw ExitCode(ExitCodes.unreachable)
        }
        if json {
            printFlushed(jsonLine(status))
        } else {
            printFlushed("epoch \(status.epoch)  head \(status.head)  first seq \(status.firstSeq)  \(Int(status.entriesPerSecond)) entries/s  divergences \(status.divergences)")
            for node in status.nodes {
                printFlushed(
                    "\(node.name)  \(node.alive ? "alive" : "DOWN ")  applied \(node.applied)  lag \(node.lag)  instances \(node.instances)  effects \(node.runningEffects)  digest \(node.digest.prefix(16))  \(node.clientEndpoint)"
                )
            }
        }
        let digests = Set(status.nodes.filter { $0.lag == 0 }.map(\.digest))
        let healthy = !status.nodes.isEmpty && status.nodes.allSatisfy(\.alive) && digests.count <= 1 && status.divergences == 0
        if !healthy { throw ExitCode(ExitCodes.checkFailed) }
    }
}
