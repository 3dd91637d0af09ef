import FlowKitCluster
import FlowKitProcesses
import Foundation
import Testing

/// Issue 5, "nothing lost": `kill -9` of a node while every node takes ledger records, then a
/// restart. Every record a client saw acknowledged is in the ledgers of every node exactly once;
/// the others at most once; and the nodes end equal.
extension ClusterProcessTests {
    enum NodeRestart: String, CustomTestStringConvertible, CaseIterable {
        /// `--data-dir` and `--snapshot-ms 500`: the node resumes from its own latest snapshot.
        case fromLocalSnapshot
        /// No data directory: the node comes back empty and joins through the coordinator's snapshot.
        case throughCoordinatorSnapshot

        var testDescription: String { rawValue }
    }

    @Test(arguments: NodeRestart.allCases)
    func nodeKilledUnderLedgerLoadLosesNothingAcknowledged(restart: NodeRestart) async throws {
        var options = TestCluster.Options()
        if restart == .fromLocalSnapshot {
            options.nodesWithDataDirectory = [1, 2, 3]
            options.allNodeArguments = ["--snapshot-ms", "500"]
        }
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            // Clients of their own with a short timeout: a request to the dead node fails fast
            // instead of stalling its worker.
            let (emits, beforeCrash, afterCrash) = try await cluster.withClients(timeout: .seconds(3)) { clients in
                let load = LedgerLoad.start(clients: clients)
                do {
                    try await load.waitForAcknowledgements(by: 2, more: 200)
                    // With local snapshots, let one be saved (every 500 ms) under load before the crash.
                    try await Task.sleep(for: .milliseconds(restart == .fromLocalSnapshot ? 1_200 : 500))
                    let beforeCrash = load.acknowledged(by: 2)
                    await cluster.killNode(2)
                    try await Task.sleep(for: .milliseconds(500))
                    try await cluster.startNodes([2])
                    // The restarted node takes emits again, and the others kept going meanwhile.
                    try await load.waitForAcknowledgements(by: 2, more: 100)
                    try await Task.sleep(for: .milliseconds(500))
                    let emits = await load.stop()
                    return (emits, beforeCrash, load.acknowledged(by: 2) - beforeCrash)
                } catch {
                    _ = await load.stop()
                    throw error
                }
            }
            let addresses = Array(Set(emits.map(\.address))).sorted()
            print("node crash (\(restart)): node 2 acknowledged \(beforeCrash) before its crash, \(afterCrash) after")

            let statuses = try await cluster.waitUntilConverged()
            let head = statuses[1]!.applied
            let ledgers = try await cluster.ledgers(addresses, head: head)
            for id in cluster.nodeIDs {
                #expect(ledgers[id] == ledgers[1], "node \(id)'s ledgers differ from node 1's at applied \(head)")
            }
            for id in cluster.nodeIDs {
                let audit = LedgerAudit(emits: emits, ledgers: ledgers[id] ?? [:])
                if id == 1 { print("node crash (\(restart)): \(audit.summary)") }
                #expect(audit.problems.isEmpty, "node \(id): \(audit.problems.count) problems: \(audit.problems.prefix(10))")
                #expect(audit.acknowledged > 300)
            }
            #expect(statuses.values.allSatisfy { $0.entriesSkipped == 0 })

            // The restart went the way the variant says.
            let restarted = try #require(cluster.node(2)?.process)
            switch restart {
            case .fromLocalSnapshot:
                #expect(restarted.stderrContains("resumed from a local snapshot"), "node 2 resumed from its local snapshot\n\(restarted.stderrReport(lines: 15))")
            case .throughCoordinatorSnapshot:
                #expect(restarted.stderrContains("joined through a snapshot"), "node 2 joined through the coordinator's snapshot\n\(restarted.stderrReport(lines: 15))")
            }
        }
    }
}
