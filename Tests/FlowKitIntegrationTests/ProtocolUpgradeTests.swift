@_spi(Wire) import FlowKitCluster
import FlowKitProcesses
import Foundation
import Testing

/// The wire protocol moves one process at a time (docs/VERSIONING.md, "Upgrading the wire
/// protocol"): every process of a cluster starts pinned to protocol 3 (`FLOWKIT_WIRE_PROTOCOL=3`:
/// it reads and writes only what a build of protocol 3 would), under a ledger load from clients
/// of protocol 4; a node, the coordinators (the standbys first, the leader last) and the other
/// nodes are then restarted speaking 4. Each connection speaks what both ends do: nothing
/// acknowledged is lost, and every node converges.
extension MultiProcessTests {
    @Suite("Wire protocol upgrade") struct ProtocolUpgradeTests {
        static let pinned = ["FLOWKIT_WIRE_PROTOCOL": "3"]

        static func log(of process: ChildProcess) -> String {
            (try? String(contentsOfFile: process.stderrPath, encoding: .utf8)) ?? ""
        }

        @Test func aClusterMovesFromProtocol3To4OneProcessAtATime() async throws {
            var options = TestCluster.Options()
            options.coordinators = 3
            options.coordinatorEnvironment = Self.pinned
            options.nodeEnvironment = [1: Self.pinned, 2: Self.pinned, 3: Self.pinned]
            try await TestCluster.run(nodes: 3, durable: true, options: options) { cluster in
                let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    // The clients speak 4; the nodes of protocol 3 refuse it in 3, and the clients
                    // speak 3 to them from then on.
                    let load = LedgerLoad.start(clients: clients, workersPerNode: 2, instances: 8)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
                        // A tool of protocol 4 that follows the log (an export) falls back too: at
                        // the node it asks for the coordinator, and at the coordinator's sync socket.
                        let sample = "\(cluster.directory)/sample.json"
                        let node2 = try #require(cluster.node(2)).clientEndpoint
                        let export = try await CommandRunner(directory: cluster.directory).run(
                            cluster.binary, ["export", "--node", node2, "--from", "1", "--count", "200", "--out", sample]
                        )
                        #expect(export.exitCode == 0 && export.stdout.contains("wrote \(sample): entries 1 to 200"), "\(export)")

                        // Node 1 first: it speaks 3 to coordinators of protocol 3.
                        try await restart(node: 1, in: cluster)
                        let node1 = try #require(cluster.node(1)).process
                        _ = try await eventually("node-1 speaks protocol 3 to its coordinator", timeout: .seconds(10)) {
                            Self.log(of: node1).contains("the coordinator speaks an older wire protocol") ? true : nil
                        }
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 20, timeout: .seconds(30)) }

                        // The coordinators, standbys first, the leader last (a failover to a
                        // coordinator of protocol 4, which answers nodes 2 and 3 in 3).
                        let leader = try await cluster.leader().id
                        for id in try cluster.coordinatorIDs.sorted(by: { ($0 == leader ? 1 : 0, $0) < ($1 == leader ? 1 : 0, $1) }) {
                            #expect(await try cluster.coordinatorProcess(id).stop() == .exited(0))
                            cluster.setEnvironment([:], ofCoordinator: id)
                            try await cluster.startCoordinator(id: id)
                            try await cluster.waitUntilInSync(id, timeout: .seconds(30))
                            for node in cluster.nodeIDs { try await load.waitForAcknowledgements(by: node, more: 10, timeout: .seconds(30)) }
                        }
                        // The first standby upgraded fetched from a leader of protocol 3 in 3.
                        let first = try cluster.coordinatorIDs.sorted().first { $0 != leader }!
                        let standbyLog = Self.log(of: try cluster.coordinatorProcess(first))
                        #expect(standbyLog.contains("the leader speaks an older wire protocol"), "\(standbyLog.suffix(2_000))")

                        // Nodes 2 and 3.
                        for id in [2, 3] { try await restart(node: id, in: cluster) }
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30, timeout: .seconds(30)) }
                        return await load.stop()
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }

                let statuses = try await cluster.waitUntilConverged(timeout: .seconds(60))
                let head = statuses[1]!.applied
                let ledgers = try await cluster.ledgers(Array(Set(emits.map(\.address))).sorted(), head: head)
                for id in cluster.nodeIDs {
                    #expect(ledgers[id] == ledgers[1], "node \(id)'s ledgers differ from node 1's at applied \(head)")
                    let audit = LedgerAudit(emits: emits, ledgers: ledgers[id] ?? [:])
                    if id == 1 { print("protocol upgrade: \(head) entries; \(audit.summary)") }
                    #expect(audit.problems.isEmpty, "node \(id): \(audit.problems.count) problems: \(audit.problems.prefix(10))")
                    #expect(audit.acknowledged > 200)
                }
            }
        }

        private func restart(node id: Int, in cluster: TestCluster) async throws {
            let node = try #require(cluster.node(id))
            #expect(await node.process.stop() == .exited(0))
            cluster.setEnvironment([:], ofNode: id)
            try await cluster.startNodes([id])
        }
    }
}
