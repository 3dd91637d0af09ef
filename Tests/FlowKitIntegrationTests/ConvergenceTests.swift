import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    /// What one emitting task had acknowledged.
    struct Acknowledged: Sendable {
        var seqs: [UInt64] = []
        /// Increments per counter instance.
        var counts: [String: Int] = [:]
        /// Writes per kv instance, and the last value this task wrote under its own key there.
        var writes: [String: Int] = [:]
        var lastValues: [String: String] = [:]
    }

    /// Many tasks emit at all three nodes at once, across 50 instances; every node ends with the
    /// same states, and nothing acknowledged is lost or applied twice.
    @Test func concurrentEmitsAtEveryNodeConverge() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let counters = (0..<30).map { "counter/c\($0)" }
            let stores = (0..<20).map { "kv/k\($0)" }
            let tasksPerNode = 8
            let emitsPerTask = 130  // 3 × 8 × 130 = 3,120 events
            let clients = cluster.clients

            let results = try await withThrowingTaskGroup(of: Acknowledged.self) { group in
                for (index, client) in clients.enumerated() {
                    for worker in 0..<tasksPerNode {
                        let taskID = index * tasksPerNode + worker
                        group.addTask {
                            var random = SplitMix64(state: UInt64(taskID) &* 7_919)
                            var acknowledged = Acknowledged()
                            for step in 0..<emitsPerTask {
                                // Most emits answer once ordered; some once applied here too.
                                let wait: WaitMode = step % 7 == 0 ? .applied : .ordered
                                if Int.random(in: 0..<10, using: &random) < 6 {
                                    let address = counters.randomElement(using: &random)!
                                    let ordered = try await client.emit(json: #"{"increment":{}}"#, to: address, wait: wait)
                                    acknowledged.seqs.append(ordered.seq)
                                    acknowledged.counts[address, default: 0] += 1
                                } else {
                                    let address = stores.randomElement(using: &random)!
                                    let value = "\(taskID)-\(step)"
                                    let ordered = try await client.emit(
                                        json: #"{"set":{"key":"w\#(taskID)","value":"\#(value)"}}"#,
                                        to: address,
                                        wait: wait
                                    )
                                    acknowledged.seqs.append(ordered.seq)
                                    acknowledged.writes[address, default: 0] += 1
                                    acknowledged.lastValues[address] = value
                                }
                            }
                            return acknowledged
                        }
                    }
                }
                return try await group.reduce(into: [Acknowledged]()) { $0.append($1) }
            }

            // Every acknowledgement is a distinct position, and together they are the whole log:
            // nothing else was ordered in this cluster, and nothing twice.
            let seqs = results.flatMap(\.seqs).sorted()
            let total = UInt64(clients.count * tasksPerNode * emitsPerTask)
            try #require(seqs.count == Int(total))
            try #require(seqs == Array(1...total), "acknowledged seqs are not exactly 1…\(total)")
            let head = seqs.last!

            let statuses = try await cluster.waitUntilApplied(head)
            for (id, status) in statuses.sorted(by: { $0.key < $1.key }) {
                #expect(status.applied == head, "node \(id) applied past the last acknowledged seq")
                #expect(status.instances == counters.count + stores.count, "node \(id) instances")
                #expect(status.rejected.isEmpty, "node \(id) rejected \(status.rejected)")
                #expect(status.entriesSkipped == 0)
            }

            // The combined digest in STATUS is refreshed with the node's periodic report, so give
            // every node a moment to catch up before comparing.
            let digests = try await eventually("all nodes report the same combined digest", timeout: .seconds(5)) {
                var digests: [Int: String] = [:]
                for id in cluster.nodeIDs { digests[id] = try await cluster.client(id).status().digest }
                return Set(digests.values).count == 1 ? digests : nil
            }
            #expect(Set(digests.values).count == 1)

            var expectedCounts: [String: Int] = [:]
            var expectedWrites: [String: Int] = [:]
            var expectedEntries: [String: [String: String]] = [:]
            for result in results {
                for (address, count) in result.counts { expectedCounts[address, default: 0] += count }
                for (address, writes) in result.writes { expectedWrites[address, default: 0] += writes }
                // Results arrive in the order tasks finished; the value carries the task id.
                for (address, value) in result.lastValues {
                    let taskID = value.split(separator: "-")[0]
                    expectedEntries[address, default: [:]]["w\(taskID)"] = value
                }
            }

            for address in counters + stores {
                let states = try await cluster.states(of: address, minApplied: head)
                let reference = try #require(states[1])
                for (id, state) in states.sorted(by: { $0.key < $1.key }) {
                    #expect(state.text == reference.text, "\(address) on node \(id) differs from node 1")
                    #expect(state.digest == reference.digest, "\(address) digest on node \(id)")
                    #expect(state.lastSeq == reference.lastSeq, "\(address) last seq on node \(id)")
                }
                if address.hasPrefix("counter/") {
                    let count = try reference.decode(CounterFlow.State.self).count
                    #expect(count == expectedCounts[address, default: 0], "\(address): increments acknowledged vs applied")
                } else {
                    let store = try reference.decode(KeyValueFlow.State.self)
                    #expect(store.version == expectedWrites[address, default: 0], "\(address): writes acknowledged vs applied")
                    #expect(store.entries == expectedEntries[address, default: [:]], "\(address): each task's last write wins")
                }
            }
        }
    }
}
