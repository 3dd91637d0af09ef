import FlowKitCluster
import FlowKitExamples
import FlowKitTools
import Foundation
import Synchronization

/// One `{"record":{"_0":id}}` a client emitted to a `ledger/…` instance, and what it was told.
struct LedgerEmit: Sendable {
    enum Outcome: Sendable {
        case acknowledged(seq: UInt64, epoch: UInt32)
        /// An error reply or no reply: the record may or may not have been ordered.
        case failed(String)
    }

    var id: String
    var address: String
    var node: Int
    var outcome: Outcome

    var isAcknowledged: Bool {
        if case .acknowledged = outcome { return true }
        return false
    }
}

/// Many tasks at every node emit ledger records with unique ids until stopped, recording every
/// outcome: the load of the fault tests, whose ids prove what was delivered and how often.
final class LedgerLoad: Sendable {
    private let emits = Mutex<[LedgerEmit]>([])
    private let acknowledgedByNode = Mutex<[Int: Int]>([:])
    private let running = RunningFlag()
    private let workers = Mutex<Task<Void, Never>?>(nil)
    let addresses: [String]
    /// The event that carries `id`, as the clients of `node` write it.
    let payload: @Sendable (_ node: Int, _ id: String) -> String

    private init(flow: String, instances: Int, payload: @escaping @Sendable (Int, String) -> String) {
        addresses = (0..<instances).map { "\(flow)/l\($0)" }
        self.payload = payload
    }

    /// Starts `workersPerNode` tasks per client, each emitting one record after another (a new
    /// emit once the previous one is answered or failed).
    ///
    /// - Parameters:
    ///   - flow: Whose instances take the records: `ledger`, or another flow whose state lists the
    ///     ids it was given.
    ///   - payload: The event carrying an id, by node (a node's build may decide its shape).
    static func start(
        clients: [Int: ClusterClient], workersPerNode: Int = 3, instances: Int = 16, flow: String = "ledger",
        payload: @escaping @Sendable (_ node: Int, _ id: String) -> String = { _, id in #"{"record":{"_0":"\#(id)"}}"# }
    ) -> LedgerLoad {
        let load = LedgerLoad(flow: flow, instances: instances, payload: payload)
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for (node, client) in clients {
                    for worker in 0..<workersPerNode {
                        group.addTask { await load.work(node: node, worker: worker, client: client) }
                    }
                }
            }
        }
        load.workers.withLock { $0 = task }
        return load
    }

    private func work(node: Int, worker: Int, client: ClusterClient) async {
        var random = SeededRandom(seed: UInt64(node * 1_000 + worker))
        var number = 0
        while running.isSet {
            number += 1
            let id = "n\(node)w\(worker)-\(number)"
            let address = addresses.randomElement(using: &random)!
            let outcome: LedgerEmit.Outcome
            do {
                let ordered = try await client.emit(json: payload(node, id), to: address)
                outcome = .acknowledged(seq: ordered.seq, epoch: ordered.epoch)
                acknowledgedByNode.withLock { $0[node, default: 0] += 1 }
            } catch {
                outcome = .failed("\(error)")
            }
            emits.withLock { $0.append(LedgerEmit(id: id, address: address, node: node, outcome: outcome)) }
            if case .failed = outcome { try? await Task.sleep(for: .milliseconds(50)) }
        }
    }

    /// Emits acknowledged so far by clients of node `node`.
    func acknowledged(by node: Int) -> Int { acknowledgedByNode.withLock { $0[node, default: 0] } }

    /// Waits until clients of `node` have `count` more acknowledgements than now (the node takes
    /// emits again), or fails after `timeout`.
    func waitForAcknowledgements(by node: Int, more count: Int, timeout: Duration = .seconds(15)) async throws {
        let target = acknowledged(by: node) + count
        _ = try await eventually("clients of node \(node) got \(count) more acknowledgements", timeout: timeout) {
            self.acknowledged(by: node) >= target ? true : nil
        }
    }

    /// Stops the workers (each finishes its emit in flight) and returns every outcome.
    func stop() async -> [LedgerEmit] {
        running.clear()
        await workers.withLock { $0 }?.value
        return emits.withLock { $0 }
    }
}

/// Checks the ledgers the nodes hold against what the clients were told.
struct LedgerAudit {
    var problems: [String] = []
    var acknowledged = 0
    var failedPresent = 0
    var failedAbsent = 0
    /// The failed emits' errors, by message, with how many were present in the ledgers.
    var failures: [String: (count: Int, present: Int)] = [:]

    /// - Parameters:
    ///   - emits: Every emit of the load.
    ///   - ledgers: One node's ledgers: address → the ids in its state, in order.
    init(emits: [LedgerEmit], ledgers: [String: [String]]) {
        var occurrences: [String: (address: String, count: Int)] = [:]
        for (address, ids) in ledgers {
            for id in ids {
                let previous = occurrences[id]
                if let previous, previous.address != address {
                    problems.append("\(id) is in \(previous.address) and in \(address)")
                }
                occurrences[id] = (address, (previous?.count ?? 0) + 1)
            }
        }
        let emitted = Dictionary(emits.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for (id, found) in occurrences where emitted[id] == nil {
            problems.append("\(id) is in \(found.address) but was never emitted")
        }
        for emit in emits {
            let found = occurrences[emit.id]
            if let found, found.address != emit.address {
                problems.append("\(emit.id) was emitted to \(emit.address) but is in \(found.address)")
            }
            let count = found?.count ?? 0
            switch emit.outcome {
            case .acknowledged(let seq, let epoch):
                acknowledged += 1
                if count != 1 {
                    problems.append("\(emit.id), acknowledged by node \(emit.node) at seq \(seq) (epoch \(epoch)), is in \(emit.address) \(count) times")
                }
            case .failed(let error):
                if count > 1 { problems.append("\(emit.id), failed at node \(emit.node) (\(error)), is in \(emit.address) \(count) times") }
                if count == 0 { failedAbsent += 1 } else { failedPresent += 1 }
                let key = Self.shorten(error)
                failures[key, default: (0, 0)].count += 1
                failures[key, default: (0, 0)].present += count > 0 ? 1 : 0
            }
        }
    }

    /// The error's kind without ids and durations that differ from emit to emit.
    private static func shorten(_ error: String) -> String {
        String(error.prefix(110))
    }

    var summary: String {
        var lines = ["\(acknowledged) acknowledged (each exactly once), \(failedAbsent + failedPresent) failed: \(failedAbsent) absent, \(failedPresent) present once"]
        for (error, tally) in failures.sorted(by: { $0.value.count > $1.value.count }) {
            lines.append("  \(tally.count)× (\(tally.present) present) \(error)")
        }
        return lines.joined(separator: "\n")
    }
}
