import FlowKit
import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import Foundation
import Testing

extension ClusterProcessTests {
    /// With `--rest-after-ms 200` on the nodes and the coordinator, instances go to rest between
    /// two rounds of emits and wake for the second: every node ends with the same states, the
    /// counts acknowledged, and no divergence alarm (the coordinator compares the woken
    /// instances' digests with its own, woken from rest too).
    @Test func instancesRestBetweenUsesAndWakeWithTheirStates() async throws {
        var options = TestCluster.Options()
        options.allNodeArguments = ["--rest-after-ms", "200"]
        options.coordinatorArguments = ["--rest-after-ms", "200"]
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let addresses = (0..<40).map { "counter/rest-\($0)" }
            var last: UInt64 = 0
            for round in 0..<2 {
                for (index, address) in addresses.enumerated() {
                    let node = cluster.nodeIDs[(index + round) % cluster.nodeIDs.count]
                    last = max(last, try await cluster.client(node).emit(json: #"{"increment":{}}"#, to: address).seq)
                }
                // Every instance is digested, found unchanged and put to rest (reports every
                // second; rest 200 ms after the digest).
                if round == 0 {
                    _ = try await cluster.waitUntilApplied(last)
                    for id in cluster.nodeIDs {
                        let resting = try await eventually("node \(id) puts its 40 instances to rest", timeout: .seconds(10)) {
                            let status = try await cluster.client(id).status()
                            return status.instancesAtRest == addresses.count ? status : nil
                        }
                        #expect(resting.instances == addresses.count)
                    }
                }
            }
            _ = try await cluster.waitUntilApplied(last)
            for address in addresses {
                let states = try await cluster.states(of: address, minApplied: last)
                for (id, state) in states {
                    #expect(try state.decode(CounterFlow.State.self).count == 2, "\(address) on node \(id)")
                    #expect(state.digest == states[1]?.digest, "\(address) digest on node \(id)")
                }
            }
            let digests = try await eventually("every node reports the same combined digest", timeout: .seconds(5)) {
                var digests: Set<String> = []
                for id in cluster.nodeIDs { digests.insert(try await cluster.client(id).status().digest) }
                return digests.count == 1 ? digests : nil
            }
            #expect(digests.count == 1)
            // Some instances woke for the second round's emits (the rest may have rested again).
            for id in cluster.nodeIDs { #expect((try await cluster.client(id).status().instancesAtRest ?? 0) < addresses.count * 2) }
            let log = try #require(cluster.coordinatorProcess).stderrText()
            #expect(!log.contains("DIVERGENCE"), "the coordinator alarmed:\n\(log.suffix(2_000))")
        }
    }
}
