#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitProcesses
import Foundation
import Synchronization
import Testing
import ZeroMQ

extension ReliabilityTests {
    /// Monitors that stop reading (a SUB socket never read, a `flowkit monitor` stopped with
    /// SIGSTOP) while the cluster takes load: the coordinator drops what their queues cannot hold,
    /// memory stays bounded everywhere, the load keeps being acknowledged and the nodes converge.
    /// The throughput cost is measured by `flowkit chaos --slow-consumer` (docs/RELIABILITY.md),
    /// not asserted here.
    @Test func stalledMonitorsCostBoundedMemoryAndTheClusterConverges() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let coordinator = try #require(cluster.coordinatorProcess)
            let processes = [("coordinator", coordinator.pid)] + cluster.nodeIDs.compactMap { id in cluster.node(id).map { ("node-\(id)", $0.process.pid) } }

            let neverRead = try await ProbeSocket(type: .sub, endpoint: endpoints.publish, curve: nil, logger: cluster.logger)
            try await neverRead.subscribe("")
            let monitor = try ChildProcess.testChild(
                executable: cluster.binary, arguments: ["monitor", "--coordinator", endpoints.submit, "--json"],
                name: "stalled-monitor", directory: cluster.directory
            )
            try await Task.sleep(for: .milliseconds(800))
            monitor.signal(SIGSTOP)

            let baseline = Dictionary(uniqueKeysWithValues: processes.map { ($0.0, Reliability.residentBytes($0.1) ?? 0) })
            let peaks = Mutex(baseline)
            let sampler = Task {
                while !Task.isCancelled {
                    for (name, pid) in processes {
                        let rss = Reliability.residentBytes(pid) ?? 0
                        peaks.withLock { $0[name] = max($0[name] ?? 0, rss) }
                    }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
            let tally = EmitCounter()
            let deadline = ContinuousClock.now + .seconds(20)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for id in cluster.nodeIDs {
                    let client = cluster.client(id)
                    for worker in 0..<4 {
                        group.addTask {
                            var number = 0
                            while ContinuousClock.now < deadline {
                                number += 1
                                let ordered = try await client.emit(json: #"{"record":{"_0":"n\#(id)w\#(worker)-\#(number)"}}"#, to: "ledger/slow-\(worker)")
                                tally.acknowledged.add(1, ordering: .relaxed)
                                tally.highest.max(ordered.seq, ordering: .relaxed)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            sampler.cancel()
            await monitor.kill9()
            await neverRead.close()

            #expect(tally.acknowledged.load(ordering: .relaxed) > 1_000, "the cluster kept taking emits: \(tally.acknowledged.load(ordering: .relaxed)) in 20 s")
            let statuses = try await cluster.waitUntilApplied(tally.highest.load(ordering: .relaxed), timeout: .seconds(30))
            #expect(Set(statuses.values.map(\.digest)).count == 1, "digests differ: \(statuses.mapValues(\.digest))")
            let growth = peaks.withLock { peaks in peaks.map { ($0.key, $0.value - baseline[$0.key, default: 0]) } }
            for (name, bytes) in growth {
                #expect(bytes < 256 << 20, "\(name) grew \(bytes >> 20) MiB with stalled monitors")
            }
            print("slow consumer: \(tally.acknowledged.load(ordering: .relaxed)) emits acknowledged in 20 s with stalled monitors; RSS growth "
                + growth.sorted { $0.0 < $1.0 }.map { "\($0.0) \($0.1 >> 20) MiB" }.joined(separator: ", "))
        }
    }
}

/// Emits acknowledged, and the highest seq among them, counted by many tasks.
final class EmitCounter: Sendable {
    let acknowledged = Atomic<Int>(0)
    let highest = Atomic<UInt64>(0)
}
