@_spi(Wire) import FlowKitCluster
import FlowKitProcesses
import Foundation
import Synchronization
import Testing

/// A user's binary in two releases under load (docs/VERSIONING.md, "Rolling upgrade"): the
/// testbed's `journal` flow, whose second release renames its case, labels its value, adds an
/// author and reshapes its state, with steps from the first. Three replicated coordinators and
/// three nodes run build 1 under load; the coordinators, then the nodes, are replaced by build 2
/// one at a time.
extension MultiProcessTests {
    @Suite("Rolling upgrade") struct RollingUpgradeTests {
        struct Journal: Decodable {
            struct Line: Decodable { var text: String; var author: String? }
            var lines: [Line]
            var count: Int
        }

        @Test func aClusterUnderLoadMovesToTheNextReleaseOneProcessAtATime() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            options.coordinators = 3
            let newer = ["FLOWKIT_TESTBED_BUILD": "2"]
            // Which build each node runs, for its clients to write in its shape.
            let builds = Mutex<[Int: Int]>([1: 1, 2: 1, 3: 1])
            try await TestCluster.run(nodes: 3, durable: true, options: options) { cluster in
                let (emits, heldBack) = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients, workersPerNode: 2, instances: 8, flow: "journal") { node, id in
                        builds.withLock { $0[node] } == 2
                            ? #"{"append":{"text":"\#(id)","author":"node-\#(node)"}}"# : #"{"write":{"_0":"\#(id)"}}"#
                    }
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
                        // The coordinators, the standbys first and the leader last (a failover).
                        let leader = try await cluster.leader().id
                        for id in try cluster.coordinatorIDs.sorted(by: { ($0 == leader ? 1 : 0, $0) < ($1 == leader ? 1 : 0, $1) }) {
                            #expect(await try cluster.coordinatorProcess(id).stop() == .exited(0))
                            cluster.setEnvironment(newer, ofCoordinator: id)
                            try await cluster.startCoordinator(id: id)
                            try await cluster.waitUntilInSync(id, timeout: .seconds(30))
                            for node in cluster.nodeIDs { try await load.waitForAcknowledgements(by: node, more: 10, timeout: .seconds(30)) }
                        }
                        // The nodes. While one runs build 1, build 2's events wait (guarantee 4):
                        // node 1's clients get no acknowledgement, the others' still do.
                        var heldBack = false
                        for id in cluster.nodeIDs {
                            let node = try #require(cluster.node(id))
                            #expect(await node.process.stop() == .exited(0))
                            cluster.setEnvironment(newer, ofNode: id)
                            builds.withLock { $0[id] = 2 }
                            try await cluster.startNodes([id])
                            if id == 1 {
                                // Node 1 runs build 2 and its clients emit; for two seconds none of
                                // its events is ordered, while nodes 2 and 3 (build 1) go on.
                                _ = try await eventually("node-1 holds submissions", timeout: .seconds(20)) {
                                    let status = try await cluster.client(1).status()
                                    return status.connected && status.pendingSubmissions > 0 ? true : nil
                                }
                                let before = load.acknowledged(by: 1)
                                let window = ContinuousClock.now + .seconds(2)
                                for other in [2, 3] { try await load.waitForAcknowledgements(by: other, more: 20, timeout: .seconds(30)) }
                                try await Task.sleep(until: window)
                                let waiting = try await cluster.client(1).status().pendingSubmissions
                                heldBack = load.acknowledged(by: 1) == before && waiting > 0
                            }
                        }
                        // Every node at build 2: the upgraded nodes' events flow.
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30, timeout: .seconds(30)) }
                        return (await load.stop(), heldBack)
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                #expect(heldBack, "node 1's build-2 events were acknowledged while nodes 2 and 3 ran build 1")

                // Nothing acknowledged lost, nothing twice, every node the same: the audit of the
                // ledger loads, over the journal's lines.
                let statuses = try await cluster.waitUntilConverged(timeout: .seconds(60))
                let head = statuses.values.map(\.applied).max() ?? 0
                var versionsSeen: Set<Bool> = []
                for id in cluster.nodeIDs {
                    var ledgers: [String: [String]] = [:]
                    for address in Set(emits.map(\.address)).sorted() {
                        let journal = try await cluster.client(id).query(address, minApplied: head).decode(Journal.self)
                        ledgers[address] = journal.lines.map(\.text)
                        #expect(journal.count == journal.lines.count, "\(address) on node-\(id)")
                        // Build 1's lines (no author) all come before build 2's: no build-2 event
                        // was ordered while a node of build 1 could still write.
                        let authored = journal.lines.map { $0.author != nil }
                        let pattern = authored.map { $0 ? "2" : "1" }.joined()
                        #expect(authored == authored.sorted { !$0 && $1 }, "\(address) on node-\(id), lines by build: \(pattern)")
                        versionsSeen.formUnion(authored)
                    }
                    let audit = LedgerAudit(emits: emits, ledgers: ledgers)
                    #expect(audit.problems.isEmpty, "node-\(id): \(audit.problems.prefix(10))")
                    #expect(audit.acknowledged > 200, "node-\(id): \(audit.acknowledged) acknowledged")
                    if id == 1 {
                        print("rolling upgrade: \(head) entries, \(audit.acknowledged) acknowledged, \(audit.failedPresent) failed but ordered, \(audit.failedAbsent) failed")
                    }
                }
                #expect(versionsSeen == [false, true], "both releases' events are in the journals")

                // A node of build 1 started against the upgraded log stops before what it cannot
                // read (guarantee 3) and does not diverge.
                let old = try #require(cluster.node(3))
                #expect(await old.process.stop() == .exited(0))
                cluster.setEnvironment([:], ofNode: 3)
                try await cluster.startNodes([3])
                let stderr = try #require(cluster.node(3)).process.stderrPath
                let log = try await eventually("node-3 of build 1 says it stopped", timeout: .seconds(20)) {
                    (try? String(contentsOfFile: stderr, encoding: .utf8)).flatMap { $0.contains("stopped applying") ? $0 : nil }
                }
                #expect(log.contains(#"flow \"journal\""#) || log.contains(#"flow "journal""#), "\(log.suffix(2_000))")
                #expect(try await cluster.client(3).status().applied < head, "it applied nothing past what it cannot read")
            }
        }
    }
}
