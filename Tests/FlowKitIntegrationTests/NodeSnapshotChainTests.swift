import FlowKitCluster
import FlowKitProcesses
import Foundation
import Testing

/// A node's local snapshots as a chain: a base of every instance, then deltas of the few that
/// changed; `kill -9` and a restart resume from the base and every delta after it.
extension ClusterProcessTests {
    @Test func aNodeKilledResumesFromItsBaseAndTheDeltasAfterIt() async throws {
        var options = TestCluster.Options()
        options.nodesWithDataDirectory = [1]
        options.allNodeArguments = ["--snapshot-ms", "200"]
        try await TestCluster.run(nodes: 2, options: options) { cluster in
            let increment = #"{"increment":{}}"#
            let snapshots = cluster.nodeDataDirectory(1) + "/snapshots"
            func files(_ prefix: String) -> [String] {
                ((try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []).filter { $0.hasPrefix(prefix) && $0.hasSuffix(".snap") }
            }
            // 300 counters, then a base of them.
            for key in 0..<300 { _ = try await cluster.client(1).emit(json: increment, to: "counter/c\(key)", wait: .ordered) }
            try await eventually("node 1 saved a base", timeout: .seconds(30)) { files("snapshot-").isEmpty ? nil : () }
            // Ten of them change between snapshots: deltas of ten each follow the base.
            var last: UInt64 = 0
            for _ in 0..<4 {
                for key in 0..<10 { last = try await cluster.client(1).emit(json: increment, to: "counter/c\(key)", wait: .applied).seq }
                try await Task.sleep(for: .milliseconds(400))
            }
            try await eventually("node 1 saved deltas", timeout: .seconds(30)) { files("delta-").count >= 2 ? () : nil }
            let deltas = files("delta-").count

            await cluster.killNode(1)
            try await cluster.startNodes([1])
            let restarted = try #require(cluster.node(1)?.process)
            let log = try String(contentsOfFile: restarted.stderrPath, encoding: .utf8)
            let resumed = try #require(
                log.split(separator: "\n").first { $0.contains("resumed from a local snapshot") }, "node 1 did not resume from its chain:\n\(log.suffix(2_000))"
            )
            #expect(resumed.contains("flowkit.deltas=\(deltas)"), "\(resumed)")
            #expect(resumed.contains("flowkit.instances=300"), "\(resumed)")

            let statuses = try await cluster.waitUntilConverged()
            #expect(statuses[1]!.applied >= last)
            for key in [0, 9, 10, 299] {
                let states = try await [cluster.client(1).query("counter/c\(key)"), cluster.client(2).query("counter/c\(key)")]
                #expect(String(decoding: states[0].json, as: UTF8.self) == (key < 10 ? #"{"count":5}"# : #"{"count":1}"#), "counter/c\(key)")
                #expect(states[0].digest == states[1].digest, "counter/c\(key)")
            }
        }
    }
}
