import FlowKitCore
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import FlowKitTools
import Foundation
import Logging
import ZeroMQ

/// Measures the coordinator and the join paths on their own, in one process over real loopback
/// sockets:
///
///     swift run -c release cluster-perf ordering [entries] [batch] [synced|relaxed]
///     swift run -c release cluster-perf replay [entries]
///
/// `ordering`: durable ordered throughput of the coordinator alone. A DEALER submits batches of
/// small binary events and keeps a window of batches in flight; the rate is acknowledged entries
/// per second (each acknowledged only after the log committed it).
///
/// `replay`: a coordinator with `entries` in its log (submitted first), then a fresh node joins
/// and catches up; reports the time until it has applied them all, both when it replays the log
/// from the start and when it joins through the coordinator's snapshot.
@main
enum ClusterPerf {
    static func main() async throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        let mode = arguments.isEmpty ? "ordering" : arguments.removeFirst()
        var logger = Logger(label: "cluster-perf")
        logger.logLevel = .error
        switch mode {
        case "ordering":
            let entries = arguments.first.flatMap(Int.init) ?? 1_000_000
            let batch = arguments.dropFirst().first.flatMap(Int.init) ?? 256
            let durability = arguments.dropFirst(2).first == "relaxed" ? CoordinatorConfiguration.Durability.relaxed : .synced
            try await ordering(entries: entries, batch: batch, durability: durability, logger: logger)
        case "submit":
            // Against a running coordinator: cluster-perf submit <submit endpoint> [entries] [batch]
            guard let endpoint = arguments.first else { throw PerfError("submit needs the coordinator's submit endpoint") }
            let entries = arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
            let batch = arguments.dropFirst(2).first.flatMap(Int.init) ?? 256
            let elapsed = try await submitAll(entries: entries, batch: batch, to: endpoint, logger: logger)
            print("submit: \(entries) entries acknowledged in \(elapsed)")
        case "replay":
            let entries = arguments.first.flatMap(Int.init) ?? 1_000_000
            try await replay(entries: entries, logger: logger)
        default:
            print("usage: cluster-perf ordering [entries] [batch] [synced|relaxed] | replay [entries]")
        }
    }

    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(LoadFlow.self, as: "load", codec: .binary)
        return registry
    }

    /// Starts a coordinator with a data directory and returns it with its endpoints.
    static func startCoordinator(
        directory: String,
        durability: CoordinatorConfiguration.Durability,
        retainEntries: UInt64? = nil,
        logger: Logger
    ) async throws -> (Coordinator, CoordinatorEndpoints, Task<Void, any Error>) {
        var configuration = CoordinatorConfiguration()
        configuration.submitEndpoint = "tcp://127.0.0.1:*"
        configuration.publishEndpoint = "tcp://127.0.0.1:*"
        configuration.syncEndpoint = "tcp://127.0.0.1:*"
        configuration.dataDirectory = directory
        configuration.durability = durability
        configuration.maxPendingEntries = 1_000_000
        if let retainEntries { configuration.retainEntries = retainEntries }
        let coordinator = Coordinator(configuration: configuration, registry: registry, logger: logger)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: CoordinatorEndpoints.self)
        let task = Task { try await coordinator.run { readyContinuation.yield($0) } }
        var iterator = ready.makeAsyncIterator()
        guard let endpoints = await iterator.next() else { throw PerfError("the coordinator did not start") }
        return (coordinator, endpoints, task)
    }

    /// Submits `entries` events in batches with `window` batches in flight; returns when all are acknowledged.
    static func submitAll(entries: Int, batch: Int, to endpoint: String, logger: Logger) async throws -> Duration {
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, logger: logger)
        let dealer = try await loop.open(.dealer) { socket in
            try socket.setOption(.sendHighWaterMark, 0)
            try socket.setOption(.receiveHighWaterMark, 0)
            try socket.connect(endpoint)
        }
        let payload = LoadFlow.Event.tick(padding: Array(repeating: 0, count: 16)).binaryEncoded()
        let session = UInt64.random(in: 1...UInt64.max)
        let window = 32
        var next: UInt64 = 1
        var acknowledged = 0
        var inFlight = 0
        let started = ContinuousClock.now
        func sendBatch() async throws {
            let count = min(batch, entries - Int(next - 1))
            guard count > 0 else { return }
            let submissions = (0..<count).map { offset in
                Submission(
                    submission: next + UInt64(offset), kind: .event, codec: .binary, submittedAt: 0,
                    address: "load/i\((Int(next) + offset) % 1_000)", payload: payload
                )
            }
            next += UInt64(count)
            inFlight += 1
            try await dealer.send(Message(parts: SubmitMessage(origin: 1, session: session, submissions: submissions).frames))
        }
        for _ in 0..<window { try await sendBatch() }
        while acknowledged < entries {
            for message in try await dealer.receiveBatch() {
                guard let ack = try? AckMessage(frames: message.frames.map(\.bytes)) else { continue }
                acknowledged += ack.acks.filter { $0.status != .refused }.count
                inFlight -= 1
                try await sendBatch()
            }
        }
        let elapsed = ContinuousClock.now - started
        await loop.shutdown()
        await context.terminate()
        return elapsed
    }

    static func ordering(entries: Int, batch: Int, durability: CoordinatorConfiguration.Durability, logger: Logger) async throws {
        let directory = NSTemporaryDirectory() + "cluster-perf-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (coordinator, endpoints, task) = try await startCoordinator(directory: directory, durability: durability, logger: logger)
        let elapsed = try await submitAll(entries: entries, batch: batch, to: endpoints.submit, logger: logger)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("ordering: \(entries) entries, batches of \(batch), \(durability) log: \(String(format: "%.2f", seconds)) s, \(Int(Double(entries) / seconds)) entries/s acknowledged")
        coordinator.shutdown()
        _ = try? await task.value
    }

    static func replay(entries: Int, logger: Logger) async throws {
        let directory = NSTemporaryDirectory() + "cluster-perf-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The whole log is kept (no compaction), so the first node really replays all of it.
        let (coordinator, endpoints, task) = try await startCoordinator(
            directory: directory, durability: .relaxed, retainEntries: UInt64(entries) * 2, logger: logger
        )
        let loading = try await submitAll(entries: entries, batch: 1_000, to: endpoints.submit, logger: logger)
        print("replay: loaded \(entries) entries in \(loading)")
        // A fresh node that replays the whole log through range requests, then one that joins
        // through the coordinator's snapshot.
        for (id, label, throughSnapshot) in [(UInt32(7), "log replay", false), (8, "snapshot join", true)] {
            var configuration = NodeConfiguration(id: id, coordinator: endpoints)
            configuration.joinThroughSnapshot = throughSnapshot
            let node = Node(configuration: configuration, registry: registry, logger: logger)
            let (ready, readyContinuation) = AsyncStream.makeStream(of: String.self)
            let started = ContinuousClock.now
            let nodeTask = Task { try await node.run { readyContinuation.yield($0) } }
            var iterator = ready.makeAsyncIterator()
            guard let client = await iterator.next() else { throw PerfError("the node did not start") }
            // Watched through the node's PROGRESS stream, not by polling its status: a status
            // costs the node's thread work that the replay would otherwise get.
            let status = try await ClusterClient(endpoint: client, logger: logger)
            for await progress in try await status.watchProgress(for: .seconds(600)) where progress.applied >= UInt64(entries) {
                break
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("replay: \(label) behind \(entries) entries: caught up in \(String(format: "%.2f", seconds)) s (\(Int(Double(entries) / seconds)) entries/s)")
            await status.close()
            node.shutdown()
            _ = try? await nodeTask.value
        }
        coordinator.shutdown()
        _ = try? await task.value
    }
}

struct PerfError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
