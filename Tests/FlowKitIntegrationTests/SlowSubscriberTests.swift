#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitProcesses
import FlowKitTools
import Foundation
import Testing

/// Issue 5: a node frozen with SIGSTOP while the others take load loses published entries once
/// every queue on the way is full: its subscription (`--subscriber-hwm 5`), the kernel's socket
/// buffers at both ends (4 KiB each, instead of the megabytes Linux grows on loopback) and the
/// coordinator's queue for it (`--publish-hwm 20`). It repairs every gap from the
/// coordinator's log and ends converged.
extension ClusterProcessTests {
    @Test func subscriberWithTinyHighWaterMarkRepairsTheGapsItWasForcedToDrop() async throws {
        var options = TestCluster.Options()
        options.coordinatorArguments = ["--publish-hwm", "20", "--publish-buffer-bytes", "4096"]
        options.nodeArguments[3] = ["--subscriber-hwm", "5", "--subscriber-buffer-bytes", "4096"]
        options.nodeMetrics = true
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let node3 = try #require(cluster.node(3))
            let metrics = try #require(node3.metricsEndpoint, "node 3 serves metrics")
            let repairsBefore = try Self.gapRepairs(metrics)

            let emits = try await cluster.withClients(timeout: .seconds(10)) { clients in
                // Load only at nodes 1 and 2: node 3 is frozen for part of it.
                let load = LedgerLoad.start(clients: clients.filter { $0.key != 3 }, workersPerNode: 4)
                do {
                    try await load.waitForAcknowledgements(by: 1, more: 100)
                    node3.process.signal(SIGSTOP)
                    try await Task.sleep(for: .milliseconds(1_500))
                    node3.process.signal(SIGCONT)
                    try await load.waitForAcknowledgements(by: 1, more: 300)
                    return await load.stop()
                } catch {
                    node3.process.signal(SIGCONT)
                    _ = await load.stop()
                    throw error
                }
            }

            let statuses = try await cluster.waitUntilConverged()
            let head = statuses[1]!.applied
            let acknowledged = emits.filter(\.isAcknowledged).count
            #expect(statuses[3]!.entriesSkipped == 0)
            let repairs = try Self.gapRepairs(metrics) - repairsBefore
            print("slow subscriber: \(acknowledged) records; node 3 repaired gaps \(Int(repairs)) times to reach \(head)")
            #expect(repairs > 0, "node 3 (--subscriber-hwm 5, stopped 1.5 s under load) shows gap repairs in flowkit_gap_repairs_total")

            let addresses = Array(Set(emits.map(\.address))).sorted()
            let ledgers = try await cluster.ledgers(addresses, head: head)
            #expect(ledgers[3] == ledgers[1], "node 3's ledgers equal node 1's at applied \(head)")
            let audit = LedgerAudit(emits: emits, ledgers: ledgers[3] ?? [:])
            #expect(audit.problems.isEmpty, "node 3: \(audit.problems.prefix(10))")
        }
    }

    /// `flowkit_gap_repairs_total` from a node's Prometheus endpoint (0 before the first repair).
    static func gapRepairs(_ endpoint: String) throws -> Double {
        try MetricsScrape.fetch(endpoint).value("flowkit_gap_repairs_total") ?? 0
    }
}
