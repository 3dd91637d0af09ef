import FlowKitCluster
import FlowKitExamples
import Foundation
import Logging

/// The end check of a chaos or fuzz run: every acknowledged ledger id is on every node exactly
/// once, no id is anywhere twice, and the coordinator's log holds each acknowledged id at the seq
/// its emit was told.
struct LedgerAudit: Sendable {
    struct Result: Sendable, Codable {
        var acknowledged = 0
        /// Ids whose emit failed (timed out, refused) but which were ordered anyway: allowed.
        var orderedWithoutAcknowledgement = 0
        /// Acknowledged ids missing from some node (or from the log).
        var lost = 0
        /// Ids found more than once on some node or in the log.
        var duplicated = 0
        /// Acknowledged ids whose seq in the log is not the one acknowledged.
        var misplaced = 0
        /// Log entries checked, and the first seq still in the log (earlier ones were compacted).
        var logEntries = 0
        var logFirstSeq: UInt64 = 1
        /// Ledger ids each node holds.
        var idsPerNode: [String: Int] = [:]
        /// The first few problems, to start an investigation from.
        var problems: [String] = []

        var passed: Bool { lost == 0 && duplicated == 0 && misplaced == 0 }
    }

    let addresses: [String]
    let logger: Logger

    func run(
        acknowledged: [ChaosLoad.Acknowledged],
        failedIDs: Set<String>,
        nodes: [UInt32: String],
        syncEndpoint: String,
        head: UInt64
    ) async throws -> Result {
        var result = Result()
        result.acknowledged = acknowledged.count
        func problem(_ text: String) { if result.problems.count < 20 { result.problems.append(text) } }
        let ackedByID = Dictionary(acknowledged.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var lostIDs: Set<String> = []
        var duplicateIDs: Set<String> = []
        var seenAnywhere: Set<String> = []

        for (node, endpoint) in nodes.sorted(by: { $0.key < $1.key }) {
            let client = try await ClusterClient(endpoint: endpoint, timeout: .seconds(30), logger: logger)
            defer { Task { await client.close() } }
            var counts: [String: Int] = [:]
            for address in addresses {
                let ids: [String]
                do {
                    let state = try await client.query(address, minApplied: head)
                    ids = try JSONDecoder().decode(LedgerFlow.State.self, from: Data(state.json)).ids
                } catch let error as ProtocolError where error.code == .notFound {
                    ids = []
                }
                for id in ids { counts[id, default: 0] += 1 }
                for id in ids { if let ack = ackedByID[id], ack.address != address { problem("node-\(node): \(id) is in \(address), acknowledged for \(ack.address)") } }
            }
            result.idsPerNode["node-\(node)"] = counts.count
            for (id, count) in counts where count > 1 {
                duplicateIDs.insert(id)
                problem("node-\(node) holds \(id) \(count) times")
            }
            for ack in acknowledged where counts[ack.id] == nil {
                lostIDs.insert(ack.id)
                problem("node-\(node) lacks acknowledged \(ack.id) (seq \(ack.seq), via node-\(ack.node))")
            }
            seenAnywhere.formUnion(counts.keys)
        }
        result.orderedWithoutAcknowledgement = seenAnywhere.intersection(failedIDs).count

        // The log, as the coordinator serves it to a node repairing a gap.
        let reader = try await LogReader(syncEndpoint: syncEndpoint, logger: logger)
        defer { Task { await reader.close() } }
        let first = try await reader.firstAvailableSeq(head: head)
        result.logFirstSeq = first
        var logSeqs: [String: [UInt64]] = [:]
        let ours = Set(addresses)
        try await reader.read(from: first, through: head) { entry in
            result.logEntries += 1
            guard entry.kind == .event, ours.contains(entry.address),
                case .record(let id)? = try? JSONDecoder().decode(LedgerFlow.Event.self, from: Data(entry.payload))
            else { return }
            logSeqs[id, default: []].append(entry.seq)
        }
        for (id, seqs) in logSeqs where seqs.count > 1 {
            duplicateIDs.insert(id)
            problem("the log holds \(id) at seqs \(seqs)")
        }
        for ack in acknowledged where ack.seq >= first {
            guard let seqs = logSeqs[ack.id] else {
                lostIDs.insert(ack.id)
                problem("the log lacks acknowledged \(ack.id) (seq \(ack.seq))")
                continue
            }
            // A duplicate's ACK names the seq it had, or 0 when no longer remembered.
            if ack.seq != 0, !seqs.contains(ack.seq) {
                result.misplaced += 1
                problem("\(ack.id) was acknowledged at seq \(ack.seq); the log has it at \(seqs)")
            }
        }
        result.lost = lostIDs.count
        result.duplicated = duplicateIDs.count
        return result
    }
}
