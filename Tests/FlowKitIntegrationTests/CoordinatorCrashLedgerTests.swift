import FlowKitCluster
import FlowKitProcesses
import Foundation
import Testing

/// Issue 5, "nothing lost": `kill -9` of the coordinator while every node takes ledger records,
/// then a restart with the same data directory on the same ports.
///
/// What a client may be told about a record in flight at the crash, and what the ledgers then
/// hold (each is checked):
///
/// * acknowledged: in the log, and in every node's ledger, exactly once;
/// * failed, absent: refused or timed out and never ordered;
/// * failed, present once: the node answered `coordinatorUnavailable` ("… it may still be
///   ordered"), or the client gave up, while the node kept retrying; the coordinator ordered it
///   once (duplicates dropped).
///
/// Never twice, never anywhere else.
extension ClusterProcessTests {
    enum CoordinatorOutage: String, CustomTestStringConvertible, CaseIterable {
        /// Back after 500 ms: the nodes' retries get every submission in flight ordered.
        case brief
        /// Back after 11 s, longer than a node's emit timeout (10 s): emits in flight are answered
        /// `coordinatorUnavailable` ("… it may still be ordered"), and the nodes keep retrying them.
        case longerThanTheEmitTimeout

        var testDescription: String { rawValue }
        var duration: Duration { self == .brief ? .milliseconds(500) : .seconds(11) }
    }

    @Test(arguments: CoordinatorOutage.allCases)
    func coordinatorKilledUnderLedgerLoadLosesNothingAcknowledged(outage: CoordinatorOutage) async throws {
        try await TestCluster.run(nodes: 3, durable: true) { cluster in
            let epochBefore = try await cluster.client(1).status().epoch
            // A client timeout above the node's own emit timeout (10 s): the node answers first.
            let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                let load = LedgerLoad.start(clients: clients)
                do {
                    for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 100) }
                    await cluster.killCoordinator()
                    try await Task.sleep(for: outage.duration)
                    try await cluster.startCoordinator()
                    // Every node takes emits again, by itself.
                    for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 100) }
                    return await load.stop()
                } catch {
                    _ = await load.stop()
                    throw error
                }
            }

            let statuses = try await cluster.waitUntilConverged()
            let head = statuses[1]!.applied
            #expect(statuses.values.allSatisfy { $0.epoch > epochBefore }, "every node is in the restarted coordinator's term")
            let addresses = Array(Set(emits.map(\.address))).sorted()
            let ledgers = try await cluster.ledgers(addresses, head: head)
            for id in cluster.nodeIDs {
                #expect(ledgers[id] == ledgers[1], "node \(id)'s ledgers differ from node 1's at applied \(head)")
                let audit = LedgerAudit(emits: emits, ledgers: ledgers[id] ?? [:])
                if id == 1 { print("coordinator crash (\(outage)): \(audit.summary)") }
                #expect(audit.problems.isEmpty, "node \(id): \(audit.problems.count) problems: \(audit.problems.prefix(10))")
                #expect(audit.acknowledged > 300)
                if outage == .longerThanTheEmitTimeout {
                    #expect(audit.failedAbsent + audit.failedPresent > 0, "emits in flight through an 11 s outage were answered with an error")
                }
            }

            // The log itself: every seq once, no submission twice, each acknowledgement at its seq.
            var acks: [Ack] = []
            for emit in emits {
                if case .acknowledged(let seq, let epoch) = emit.outcome {
                    acks.append(Ack(address: emit.address, seq: seq, epoch: epoch, node: emit.node))
                }
            }
            let audit = try await cluster.auditLog(through: head, against: acks)
            #expect(audit.problems.isEmpty, "the log: \(audit.problems.prefix(10))")
            // Nothing but the load's records was ordered.
            #expect(audit.entries.count == ledgers[1]!.values.reduce(0) { $0 + $1.count })
            let coordinatorLog = cluster.coordinatorProcess?.stderrText() ?? ""
            #expect(coordinatorLog.contains("recovered the log"), "the restarted coordinator recovered its log")
        }
    }
}
