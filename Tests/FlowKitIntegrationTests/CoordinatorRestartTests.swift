import FlowKitCluster
import FlowKitExamples
import Foundation
import Synchronization
import Testing

extension ClusterProcessTests {
    /// `kill -9` of the coordinator under load, then a restart on the same ports with the same
    /// data directory: the nodes resume by themselves, and every acknowledged increment is there
    /// exactly once.
    @Test func coordinatorKilledUnderLoadAndRestartedLosesNothingAcknowledged() async throws {
        try await TestCluster.run(nodes: 3, durable: true) { cluster in
            let addresses = (0..<5).map { "counter/r\($0)" }
            let warmup = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: addresses[0], wait: .applied)
            let oldEpoch = warmup.epoch

            struct Tally: Sendable {
                var acknowledged: [String: Int] = [:]
                /// Emits that failed: they may or may not have been ordered.
                var failed: [String: Int] = [:]
                var errors: [String] = []
                var maxSeq: UInt64 = 0
            }
            let running = RunningFlag()
            let clients = cluster.clients

            async let tallies: [Tally] = withThrowingTaskGroup(of: Tally.self) { group in
                for (index, client) in clients.enumerated() {
                    for worker in 0..<2 {
                        group.addTask {
                            var random = SplitMix64(state: UInt64(index * 2 + worker + 1))
                            var tally = Tally()
                            while running.isSet {
                                let address = addresses.randomElement(using: &random)!
                                do {
                                    let ordered = try await client.emit(json: #"{"increment":{}}"#, to: address)
                                    tally.acknowledged[address, default: 0] += 1
                                    tally.maxSeq = max(tally.maxSeq, ordered.seq)
                                } catch {
                                    tally.failed[address, default: 0] += 1
                                    tally.errors.append("\(error)")
                                }
                            }
                            return tally
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }

            try await Task.sleep(for: .seconds(1))
            await cluster.killCoordinator()
            try await Task.sleep(for: .milliseconds(500))
            try await cluster.startCoordinator()
            let restarted = ContinuousClock.now

            // Each node takes emits again, in the new term, without being told anything.
            for id in cluster.nodeIDs {
                let ordered = try await eventually("node \(id) orders emits again", timeout: .seconds(10), every: .milliseconds(100)) {
                    let ordered = try await cluster.client(id).emit(json: #"{"increment":{}}"#, to: "counter/probe")
                    return ordered.epoch > oldEpoch ? ordered : nil
                }
                #expect(ordered.seq > warmup.seq)
            }
            let resumedAfter = ContinuousClock.now - restarted
            #expect(resumedAfter < .seconds(5), "nodes resumed \(resumedAfter) after the restart")
            try await Task.sleep(for: .seconds(1))
            running.clear()
            let results = try await tallies

            var acknowledged: [String: Int] = [addresses[0]: 1]
            var failed: [String: Int] = [:]
            for tally in results {
                acknowledged.merge(tally.acknowledged, uniquingKeysWith: +)
                failed.merge(tally.failed, uniquingKeysWith: +)
            }
            let errors = results.flatMap(\.errors)
            let total = acknowledged.values.reduce(0, +)
            try #require(total > 50, "the load ran: \(total) increments acknowledged")
            // Emits in flight during the outage wait for the new coordinator, so none should fail.
            #expect(errors.isEmpty, "\(errors.count) emits failed: \(Set(errors))")

            let head = try await cluster.client(1).status().knownHead
            try await cluster.waitUntilApplied(max(head, results.map(\.maxSeq).max() ?? 0))
            for address in addresses {
                let states = try await cluster.states(of: address, minApplied: head)
                let reference = try #require(states[1])
                for (id, state) in states {
                    #expect(state.text == reference.text && state.digest == reference.digest, "\(address) on node \(id)")
                }
                let count = try reference.decode(CounterFlow.State.self).count
                let acked = acknowledged[address, default: 0]
                let uncertain = failed[address, default: 0]
                #expect(count >= acked, "\(address): \(acked - count) acknowledged increments lost")
                #expect(count <= acked + uncertain, "\(address): \(count - acked) increments applied that were never acknowledged")
            }
            let probes = try await cluster.client(1).query("counter/probe", minApplied: head)
            #expect(try probes.decode(CounterFlow.State.self).count >= cluster.nodeIDs.count)

            let log = cluster.coordinatorProcess?.stderrText() ?? ""
            #expect(log.contains("recovered the log"), "the restarted coordinator recovered its log")
        }
    }
}

/// A flag many tasks read and one clears.
final class RunningFlag: Sendable {
    private let value = Atomic<Bool>(true)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func clear() { value.store(false, ordering: .relaxed) }
}
