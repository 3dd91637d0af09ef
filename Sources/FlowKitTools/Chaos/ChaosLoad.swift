import FlowKitCluster
import Foundation
import Synchronization

/// A steady load of ledger records with unique ids, from workers at every node, recording what
/// each emit was told: the acknowledged ids are what the end check looks for on every node.
///
/// Every attempt has a fresh id, so an emit that failed (a timeout while its node was down) and was
/// ordered anyway shows up once, never twice: any id found twice is a duplicate delivery.
final class ChaosLoad: Sendable {
    struct Acknowledged: Sendable, Codable {
        var id: String
        var address: String
        var seq: UInt64
        var node: UInt32
    }

    private struct Record {
        var acknowledged: [Acknowledged] = []
        var failedIDs: Set<String> = []
        var failures: [String: Int] = [:]
    }

    let addresses: [String]
    private let run: String
    private let record = Mutex(Record())
    private let acknowledgedCount = Atomic<Int>(0)
    private let attempts = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let workers = Mutex<Task<Void, Never>?>(nil)

    /// - Parameters:
    ///   - run: A tag that makes this run's ids unique (the seed and start time).
    ///   - instances: How many `ledger/…` instances the records are spread over.
    init(run: String, instances: Int) {
        self.run = run
        addresses = (0..<instances).map { "ledger/\(run)-\($0)" }
    }

    /// Starts `workersPerNode` workers per client; with `rate`, the whole load is paced to about
    /// that many emits per second, otherwise each worker emits as fast as it is answered.
    func start(clients: [UInt32: ClusterClient], workersPerNode: Int, rate: Double?, seed: UInt64) {
        let total = Double(clients.count * workersPerNode)
        let interval = rate.map { Duration.seconds(total / $0) }
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for (node, client) in clients {
                    for worker in 0..<workersPerNode {
                        let random = SeededRandom(seed: seed).derived("load-\(node)-\(worker)")
                        group.addTask { await self.work(node: node, worker: worker, client: client, interval: interval, random: random) }
                    }
                }
            }
        }
        workers.withLock { $0 = task }
    }

    private func work(node: UInt32, worker: Int, client: ClusterClient, interval: Duration?, random: SeededRandom) async {
        var random = random
        var number = 0
        var next = ContinuousClock.now
        while running.load(ordering: .relaxed) {
            if let interval {
                next += interval
                if next > .now { try? await Task.sleep(until: next) } else { next = .now }
            }
            number += 1
            let id = "\(run)-n\(node)w\(worker)-\(number)"
            let address = addresses.randomElement(using: &random)!
            attempts.add(1, ordering: .relaxed)
            do {
                let ordered = try await client.emit(json: JSONValue.object(["record": ["_0": .string(id)]]).text(), to: address)
                acknowledgedCount.add(1, ordering: .relaxed)
                record.withLock { $0.acknowledged.append(Acknowledged(id: id, address: address, seq: ordered.seq, node: node)) }
            } catch {
                let reason = Self.reason(error)
                record.withLock {
                    $0.failedIDs.insert(id)
                    $0.failures[reason, default: 0] += 1
                }
                // Do not spin against a node that is down or refusing.
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// A short name for why an emit failed, to count failures by.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let error as ProtocolError: error.code.metricLabel
        case let error as ClusterClientError where error.code == .timedOut: "timed_out"
        case let error as ClusterClientError where error.code == .closed: "closed"
        default: "other"
        }
    }

    /// Stops the workers and waits for the emits in flight to end.
    func stop() async {
        running.store(false, ordering: .relaxed)
        await workers.withLock { $0 }?.value
    }

    var acknowledged: [Acknowledged] { record.withLock { $0.acknowledged } }
    var failedIDs: Set<String> { record.withLock { $0.failedIDs } }
    var failures: [String: Int] { record.withLock { $0.failures } }
    /// Emits acknowledged so far (cheap: for throughput).
    var acknowledgedSoFar: Int { acknowledgedCount.load(ordering: .relaxed) }
    var attempted: Int { attempts.load(ordering: .relaxed) }
}
