import ArgumentParser
import FlowKitCluster
import Foundation
import Logging
import ZeroMQ

/// `flowkit monitor`: watches a cluster without touching it.
struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Watch a cluster: entries as they are ordered, nodes' progress, alarms; or one instance's state.",
        discussion: """
            On a terminal the view is a screen redrawn in place: the head and rate, each node with \
            a bar for its lag, the coordinators, alarms and the latest entries; q or Ctrl-C quits \
            and leaves the terminal as it was. Piped, it prints one line per entry and alarm, and a \
            status line when it changed (or every 30 s); with --json, JSON lines with stable fields. \
            A monitor only subscribes: if it reads too slowly the coordinator drops what it cannot take, and the monitor says it fell behind. \
            With --state flow/key it replays the log itself into a local replica (no node is asked) \
            and prints the instance's state each time it changes.
              flowkit monitor --flow counter
              flowkit monitor --instance counter/room-1 --json
              flowkit monitor --state timer/kitchen
            """
    )

    @OptionGroup var target: CoordinatorTargetOptions
    @OptionGroup var curve: CurveClientOptions

    @Option(help: "The local cluster's directory, when --coordinator is not given.")
    var clusterDir = LocalClusterFile.defaultDirectory

    @Option(help: "Only entries of this flow.")
    var flow: String?

    @Option(help: "Only entries of this instance (flow/key).")
    var instance: String?

    @Option(help: "Replay the log and print this instance's state (flow/key) as it changes.")
    var state: String?

    @Flag(help: "JSON lines.")
    var json = false

    @Flag(help: "With --json, also print heartbeats (10 a second).")
    var heartbeats = false

    @Option(help: "Stop after this many seconds.")
    var duration: Double?

    @Option(help: "Messages that may queue for this monitor before the coordinator drops the rest.")
    var receiveHighWaterMark: Int32 = 10_000

    func run() async throws {
        let logger = {
            var logger = Logger(label: "flowkit.monitor")
            logger.logLevel = .error
            return logger
        }()
        let settings = try Settings(path: nil)
        let endpoints = try target.endpoints(settings: settings, section: "monitor", clusterDir: clusterDir)
        let publishEndpoints = try target.publishEndpoints(settings: settings, section: "monitor", clusterDir: clusterDir)
        let (transport, serverKey) = try curve.resolve(localCluster: try? LocalClusterFile.read(directory: clusterDir)) {
            $0.curve?.coordinatorPublicKey
        }
        let deadline = duration.map { ContinuousClock.now.advanced(by: .milliseconds(Int($0 * 1_000))) }
        let stop = StopFlag()
        do {
            try await ShutdownService.run(logger: logger) {
                if let state {
                    try await watchState(
                        state, endpoints: endpoints, transport: transport, serverKey: serverKey,
                        deadline: deadline, stop: stop, logger: logger
                    )
                } else {
                    let topics = [instance, flow.map { $0 + "/" }].compactMap { $0 }
                    try await LiveView.run(
                        publishEndpoints: publishEndpoints,
                        topics: Array(topics.prefix(1)),
                        transport: transport,
                        serverKey: serverKey,
                        view: MonitorView(),
                        title: "flowkit monitor \(publishEndpoints.joined(separator: " ")) — q or Ctrl-C stops",
                        format: json ? .json : nil,
                        deadline: deadline,
                        heartbeats: heartbeats,
                        stop: stop,
                        logger: logger
                    )
                }
            } stop: {
                stop.set()
            }
        } catch {
            throw fail(error)
        }
    }

    private func watchState(
        _ address: String,
        endpoints: CoordinatorEndpoints,
        transport: TransportOptions,
        serverKey: CurveKey?,
        deadline: ContinuousClock.Instant?,
        stop: StopFlag,
        logger: Logger
    ) async throws {
        let watcher = try StateWatcher(
            endpoints: endpoints, address: address, registry: FlowKitCLI.registry,
            transport: transport, serverPublicKey: serverKey, logger: logger
        )
        let updates = try await watcher.updates()
        let reader = Task {
            for try await update in updates {
                let text = String(decoding: update.state, as: UTF8.self)
                if json {
                    let line: JSONValue = [
                        "address": .string(address), "seq": .int(update.seq), "digest": .string("\(update.digest)"),
                        "state": (try? JSONValue(parsing: update.state)) ?? .string(text),
                    ]
                    printFlushed(line.text())
                } else {
                    printFlushed("\(address) after seq \(update.seq): \(text)")
                }
            }
        }
        while !stop.isSet {
            if let deadline, ContinuousClock.now >= deadline { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        reader.cancel()
    }
}
