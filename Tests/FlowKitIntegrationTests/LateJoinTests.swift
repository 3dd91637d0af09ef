@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import FlowKitTools
import Foundation
import Logging
import Synchronization
import Testing

/// Issue 5: a node that starts after 100,000 entries joins through a snapshot and converges.
extension ClusterProcessTests {
    /// Emits `count` load ticks through the node at `endpoint`, to `load/i<k>` round-robin, with
    /// many requests in flight.
    ///
    /// - Returns: The acknowledged ticks per instance index.
    static func pipelinedEmits(_ count: Int, to endpoint: String, instances: Int, payload: [UInt8], logger: Logger) async throws -> [Int: Int] {
        let dealer = try await RawDealer(endpoint: endpoint, logger: logger)
        do {
            var counts: [Int: Int] = [:]
            var sent = 0
            var answered = 0
            while answered < count {
                let room = min(2_000 - (sent - answered), count - sent, 500)
                if room > 0 {
                    let batch = (sent..<sent + room).map { request in
                        ClientRequest.emit(
                            request: UInt64(request + 1), wait: .ordered, codec: .binary, address: "load/i\(request % instances)", payload: payload
                        ).frames
                    }
                    try await dealer.send(batch: batch)
                    sent += room
                }
                let replies = try await withThrowingTaskGroup(of: [[[UInt8]]]?.self) { group in
                    group.addTask { try await dealer.receiveBatch() }
                    group.addTask {
                        try await Task.sleep(for: .seconds(15))
                        return nil
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? nil
                }
                guard let replies else { throw HarnessError("no EMITTED from \(endpoint) for 15 s (\(answered) of \(count) answered)") }
                for frames in replies {
                    switch try ClientReply(frames: frames) {
                    case .emitted(let request, _, _, _):
                        counts[Int(request - 1) % instances, default: 0] += 1
                        answered += 1
                    case let other:
                        throw HarnessError("\(endpoint) answered an EMIT with \(other)")
                    }
                }
            }
            await dealer.close()
            return counts
        } catch {
            await dealer.close()
            throw error
        }
    }

    @Test func nodeStartedAfter100000EntriesJoinsThroughASnapshot() async throws {
        try await TestCluster.run(nodes: 2, durable: true) { cluster in
            let target: UInt64 = 100_000
            let instances = 500
            // The load flow with its binary codec: a tag byte (1, tick) and 8 bytes of padding.
            let payload: [UInt8] = [1] + [UInt8](repeating: 0xAB, count: 8)
            let started = ContinuousClock.now
            // Pipelined EMITs (up to 2,000 in flight per node, in batches) over a raw DEALER per
            // node: the test process's own overhead per emit stays small.
            let perInstance = try await withThrowingTaskGroup(of: [Int: Int].self) { group in
                for id in cluster.nodeIDs {
                    let endpoint = cluster.node(id)!.clientEndpoint
                    let count = Int(target) / cluster.nodeIDs.count + 1
                    group.addTask {
                        try await Self.pipelinedEmits(count, to: endpoint, instances: instances, payload: payload, logger: cluster.logger)
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0.merge($1, uniquingKeysWith: +) }
            }
            let loadTook = ContinuousClock.now - started
            let total = perInstance.values.reduce(0, +)
            try #require(total >= Int(target))
            let statuses = try await cluster.waitUntilConverged()
            let head = statuses[1]!.applied
            #expect(head == UInt64(total), "the log holds exactly the \(total) acknowledged entries")
            print("late join: \(total) entries in \(loadTook) (\(Int(Double(total) / loadTook.seconds)) entries/s, debug build)")

            // Node 3, fresh, joins behind the whole log.
            let joinStarted = ContinuousClock.now
            try await cluster.startNodes([3])
            let joined = try await eventually("node 3 applied \(head)", timeout: .seconds(30), every: .milliseconds(20)) {
                let status = try await cluster.client(3).status()
                return status.applied >= head ? status : nil
            }
            let joinTook = ContinuousClock.now - joinStarted
            print("late join: node 3 caught up with \(head) entries (\(instances) instances) \(joinTook) after its start (process start included)")

            let node3 = try #require(cluster.node(3)?.process)
            #expect(node3.stderrContains("joined through a snapshot"), "node 3 joined through a snapshot\n\(node3.stderrReport(lines: 15))")
            #expect(joined.instances == instances)
            let converged = try await cluster.waitUntilConverged()
            #expect(Set(converged.values.map(\.applied)) == [head])
            // And the states are the ones the acknowledgements add up to.
            for index in [0, instances / 2, instances - 1] {
                let states = try await cluster.states(of: "load/i\(index)", minApplied: head)
                for (id, state) in states {
                    #expect(try state.decode(LoadFlow.State.self).count == perInstance[index], "load/i\(index) on node \(id)")
                }
            }
        }
    }
}

/// A count many tasks bump.
final class SharedCounter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    func add(_ amount: Int) { count.add(amount, ordering: .relaxed) }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
