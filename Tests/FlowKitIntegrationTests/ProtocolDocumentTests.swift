import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    /// docs/PROTOCOL.md is complete enough for a client in another language: scripts/protocol_client.py,
    /// written from the document alone with its own decoder (Python and pyzmq, no code shared with
    /// FlowKit), emits through a node, decodes the published ENTRIES and HEARTBEATs, reads the same
    /// entries back with RANGE_REQUEST, queries the state and sends malformed requests. With three
    /// replicated coordinators it reads from the leader, as the document says a client finds it.
    @Test(arguments: [1, 3])
    func aClientWrittenFromTheProtocolDocumentTalksToTheCluster(coordinators: Int) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/protocol_client.py").path
        var options = TestCluster.Options()
        options.coordinators = coordinators
        try await TestCluster.run(nodes: 2, durable: coordinators > 1, options: options) { cluster in
            let endpoints = coordinators > 1 ? try await cluster.leader().endpoints : try #require(cluster.coordinatorEndpoints)
            let node = try #require(cluster.node(2)).clientEndpoint
            let result = try await Reliability.run(
                "/usr/bin/env",
                ["python3", script, "--node", node, "--publish", endpoints.publish, "--sync", endpoints.sync, "--address", "counter/py-doc", "--count", "7"],
                timeout: .seconds(60)
            )
            #expect(result.status == 0, "protocol_client.py: \(result.stdout)\n\(result.stderr)")
            let line = try #require(result.stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }), "no JSON line: \(result.stdout)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect((report["failures"] as? [Any])?.isEmpty == true, "\(line)")
            // Every node holds what the script emitted, as FlowKit's own client sees it.
            let seqs = (report["seqs"] as? [NSNumber])?.map(\.uint64Value) ?? []
            #expect(seqs.count == 7, "\(line)")
            for id in cluster.nodeIDs {
                let state = try await cluster.client(id).query("counter/py-doc", minApplied: seqs.max() ?? 1)
                #expect(try state.decode(CounterFlow.State.self).count == 7, "counter/py-doc on node \(id): \(state.text)")
            }
        }
    }
}
