@_spi(Wire) import FlowKitCluster
import FlowKit
import FlowKitProcesses
import Foundation
import Testing

/// A node whose build is older than an entry in the log stops there, says so, and goes on once it
/// runs a build that reads it (docs/VERSIONING.md, guarantee 3). The testbed's `notes` flow is at
/// version 2 in `FLOWKIT_TESTBED_BUILD=2`, at 1 otherwise.
extension MultiProcessTests {
    @Suite("Flow versions") struct FlowVersionTests {
        struct Notes: Decodable { var notes: [String] }

        /// The testbed's `notes` as a client of build 1 holds it (version 1).
        struct NotesFlow: ReplicatedFlow {
            struct State: Codable, Hashable, Sendable { var notes: [String] = [] }
            enum Event: Codable, Hashable, Sendable { case add(String) }
            static var initialState: State { State() }
            func reduce(into state: inout State, event: Event) -> Effect<Event> {
                if case .add(let note) = event { state.notes.append(note) }
                return .none
            }
        }

        static func status(_ cluster: TestCluster) async throws -> [String: Any] {
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let result = try await CommandRunner(directory: cluster.directory).run(
                cluster.binary, ["status", "--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish, "--json", "--settle", "0"]
            )
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
        }

        @Test func aNodeOfAnOlderBuildStopsAtANewerEntryAndGoesOnOnceUpgraded() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            let newer = ["FLOWKIT_TESTBED_BUILD": "2"]
            options.coordinatorEnvironment = newer
            options.nodeEnvironment = [1: newer, 2: [:]]
            try await TestCluster.run(nodes: 2, options: options) { cluster in
                // Version 1, from the older node: ordered, and read by both.
                let old = try await cluster.client(2).emit(json: #"{"add":{"_0":"from build 1"}}"#, to: "notes/a", wait: .applied)
                try await cluster.waitUntilApplied(old.seq)

                // A client of build 1 follows the instance.
                let handle = try await cluster.client(2).flow(NotesFlow.self, "a", as: "notes")
                try await handle.waitUntilApplied(old.seq)
                #expect(await handle.state.notes == ["from build 1"])

                // Version 2, from the newer node: the older node stops before it.
                let new = try await cluster.client(1).emit(json: #"{"add":{"_0":"from build 2"}}"#, to: "notes/a", wait: .applied)
                // So does the client, and says why rather than timing out.
                let refused = await #expect(throws: ProtocolError.self) { try await handle.waitUntilApplied(new.seq) }
                #expect(refused?.code == .versionUnreadable && refused?.message.contains("entry \(new.seq) of flow \"notes\" is at version 2") == true)
                await handle.close()
                // The older node's own emits are still ordered; it applies none of them now.
                let behind = try await cluster.client(2).emit(json: #"{"add":{"_0":"behind the wall"}}"#, to: "notes/a", wait: .ordered)
                let stopped = try await eventually("node-2 names the entry it cannot read", timeout: .seconds(15)) {
                    let nodes = try await Self.status(cluster)["nodes"] as? [[String: Any]] ?? []
                    return nodes.first { $0["name"] as? String == "node-2" }?["unreadable"] as? [String: Any]
                }
                #expect(stopped["seq"] as? Int == Int(new.seq) && stopped["flow"] as? String == "notes", "\(stopped)")
                #expect(stopped["version"] as? Int == 2 && stopped["reads"] as? Int == 1, "\(stopped)")
                #expect(try await cluster.client(2).status().applied == old.seq, "it applied nothing from the newer entry on")
                let problems = try await Self.status(cluster)["problems"] as? [String] ?? []
                #expect(problems.contains { $0.hasPrefix("node-2 must be upgraded: entry \(new.seq) of flow \"notes\" is at version 2") }, "\(problems)")
                let log = (try? String(contentsOfFile: try #require(cluster.node(2)).process.stderrPath, encoding: .utf8)) ?? ""
                #expect(log.components(separatedBy: "stopped applying").count == 2, "said once: \(log.suffix(2_000))")
                let coordinatorLog = (try? String(contentsOfFile: try #require(cluster.coordinatorProcess).stderrPath, encoding: .utf8)) ?? ""
                #expect(coordinatorLog.contains("VERSION UNREADABLE"), "\(coordinatorLog.suffix(2_000))")

                // Upgraded, it replays the log from the start and converges with the other.
                let node2 = try #require(cluster.node(2))
                #expect(await node2.process.stop() == .exited(0))
                cluster.setEnvironment(newer, ofNode: 2)
                try await cluster.startNodes([2])
                try await cluster.waitUntilApplied(behind.seq, timeout: .seconds(30))
                _ = try await cluster.waitUntilConverged()
                for id in cluster.nodeIDs {
                    let notes = try await cluster.client(id).query("notes/a", minApplied: behind.seq).decode(Notes.self).notes
                    #expect(notes == ["from build 1", "from build 2", "behind the wall"], "node-\(id): \(notes)")
                }
            }
        }
    }
}
