import FlowKit
import FlowKitCluster
import FlowKitExamples
import FlowKitTools
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

    /// The binaries run on jemalloc on Linux (Package.swift, CFlowKitSupport): it is linked, and it is
    /// the malloc the process got.
    func expectJemalloc(_ allocator: String?) {
        #if os(Linux)
        let allocator = allocator ?? "none"
        #expect(allocator.hasPrefix("jemalloc "), "the READY line named \(allocator)")
        #endif
    }

    /// Many tasks emit at all three nodes at once, across 50 instances; every node ends with the
    /// same states, and nothing acknowledged is lost or applied twice.
    @Test func concurrentEmitsAtEveryNodeConverge() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            expectJemalloc(cluster.coordinatorAllocator)
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
                            var random = SeededRandom(seed: UInt64(taskID) &* 7_919)
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

extension ClusterProcessTests {
    /// A node killed with `kill -9` while the others keep taking emits comes back on its old port,
    /// joins, and ends with the same states; nothing acknowledged is lost or applied twice.
    @Test func nodeKilledAndRestartedUnderLoadCatchesUp() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let addresses = (0..<7).map { "counter/n\($0)" }
            /// Emits `count` increments from each of `nodes`, concurrently; returns the acks.
            @Sendable func load(_ nodes: [Int], _ count: Int, seed: UInt64) async throws -> [(String, UInt64)] {
                try await withThrowingTaskGroup(of: [(String, UInt64)].self) { group in
                    for id in nodes {
                        let client = cluster.client(id)
                        group.addTask {
                            var random = SeededRandom(seed: seed &+ UInt64(id))
                            var acks: [(String, UInt64)] = []
                            for _ in 0..<count {
                                let address = addresses.randomElement(using: &random)!
                                acks.append((address, try await client.emit(json: #"{"increment":{}}"#, to: address).seq))
                            }
                            return acks
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
            var acks = try await load([1, 2, 3], 100, seed: 1)
            await cluster.killNode(2)
            async let during = load([1, 3], 150, seed: 2)
            try await Task.sleep(for: .milliseconds(300))
            try await cluster.startNodes([2])
            acks += try await during
            acks += try await load([1, 2, 3], 100, seed: 3)

            let seqs = acks.map(\.1).sorted()
            try #require(seqs == Array(1...UInt64(acks.count)), "acknowledged seqs are not exactly 1…\(acks.count)")
            let head = seqs.last!
            try await cluster.waitUntilApplied(head)
            var expected: [String: Int] = [:]
            for (address, _) in acks { expected[address, default: 0] += 1 }
            for address in addresses {
                let states = try await cluster.states(of: address, minApplied: head)
                let reference = try #require(states[1])
                for (id, state) in states {
                    #expect(state.text == reference.text && state.digest == reference.digest, "\(address) on node \(id)")
                }
                #expect(try reference.decode(CounterFlow.State.self).count == expected[address, default: 0], "\(address)")
            }
            let restarted = try await cluster.client(2).status()
            #expect(restarted.applied == head && restarted.instances == addresses.count)
        }
    }

    /// STATUS's `digest` is "the combined digest of every instance" next to `applied`: right after
    /// the node applied an entry, it must cover that entry, or nodes at the same `applied` cannot be
    /// compared.
    @Test func statusDigestCoversWhatTheNodeHasApplied() async throws {
        try await TestCluster.run(nodes: 1) { cluster in
            let client = cluster.client(1)
            var addresses: [String] = []
            var mismatches: [String] = []
            for index in 0..<3 {
                let address = "counter/d\(index)"
                addresses.append(address)
                let ordered = try await client.emit(json: #"{"increment":{}}"#, to: address, wait: .applied)
                let status = try await client.status()
                try #require(status.applied == ordered.seq)
                var combined = [UInt8](repeating: 0, count: 16)
                for address in addresses {
                    let digest = try await client.query(address).digest
                    let pair = StateDigest(combining: [(key: address, digest: digest)])
                    for byte in 0..<16 { combined[byte] ^= pair.bytes[byte] }
                }
                let expected = StateDigest(bytes: combined).description
                if status.digest != expected {
                    mismatches.append("at applied \(status.applied) (\(status.instances) instances): \(status.digest), expected \(expected)")
                }
            }
            #expect(mismatches.isEmpty, "\(mismatches)")
        }
    }
}

extension ClusterProcessTests {
    /// A node started late joins through a snapshot; a query that arrives while it joins, asking
    /// for the head the snapshot covers, is answered once the snapshot is in.
    @Test func queryWaitingDuringASnapshotJoinIsAnswered() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            // Many instances, so that building and restoring the snapshot takes a while.
            let client = cluster.client(1)
            let head = try await withThrowingTaskGroup(of: UInt64.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var last: UInt64 = 0
                        for index in stride(from: worker, to: 1_500, by: 8) {
                            last = max(last, try await client.emit(json: #"{"increment":{}}"#, to: "counter/j\(index)").seq)
                        }
                        return last
                    }
                }
                return try await group.reduce(0, max)
            }
            try await cluster.startNodes([3])
            let started = ContinuousClock.now
            let result = await Result(awaiting: { try await cluster.client(3).query("counter/j0", minApplied: head) })
            let took = ContinuousClock.now - started
            let joined = try await cluster.client(3).status()
            #expect(joined.applied == head && joined.instances == 1_500)
            // A query waiting during the join is answered when the snapshot lands, not by its timeout.
            let state = try result.get()
            #expect(try state.decode(CounterFlow.State.self).count == 1)
            #expect(took < .seconds(4), "answered after \(took), the query timeout being 5 s")
        }
    }
}
