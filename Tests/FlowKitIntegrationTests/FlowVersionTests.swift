@_spi(Wire) import FlowKitCluster
import FlowKit
import FlowKitProcesses
import Foundation
import Testing

/// A newer version of a flow is ordered only once no live node runs an older one, and a node whose
/// build is older than an entry in the log stops there, says so, and goes on once it runs a build
/// that reads it (docs/VERSIONING.md, guarantees 3 and 4). The testbed's `notes` flow is at
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

        /// The status's account of the `notes` flow's versions (`versions.notes`).
        static func notesVersions(_ cluster: TestCluster) async throws -> [String: Any]? {
            (try await Self.status(cluster)["versions"] as? [String: Any])?["notes"] as? [String: Any]
        }

        @Test func aNewerVersionWaitsForTheOlderNodeAndAnOlderNodeStopsAtANewerEntry() async throws {
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
                let handle = try await cluster.client(1).flow(NotesFlow.self, "a", as: "notes")
                try await handle.waitUntilApplied(old.seq)
                #expect(await handle.state.notes == ["from build 1"])

                // Version 2, from the newer node, waits while the older node is live (guarantee 4);
                // the status says who holds it back.
                let newerEmit = Task { try await cluster.client(1).emit(json: #"{"add":{"_0":"from build 2"}}"#, to: "notes/a", wait: .ordered) }
                let waiting = try await eventually("the status names node-2 as holding version 2 back", timeout: .seconds(15)) {
                    try await Self.notesVersions(cluster).flatMap { $0["behind"] as? [String] == ["node-2"] ? $0 : nil }
                }
                #expect(waiting["agreed"] as? Int == 1 && waiting["newest"] as? Int == 2, "\(waiting)")
                let upgrading = try await Self.status(cluster)["problems"] as? [String] ?? []
                #expect(upgrading.contains { $0.hasPrefix(#"flow "notes" is being upgraded: version 2 waits for node-2 (at 1)"#) }, "\(upgrading)")
                #expect(try await cluster.client(1).query("notes/a").decode(Notes.self).notes == ["from build 1"], "not ordered while node-2 runs")

                // The older node leaves: once it counts as down, the waiting event is ordered.
                let node2 = try #require(cluster.node(2))
                #expect(await node2.process.stop() == .exited(0))
                let new = try await newerEmit.value
                // The client of build 1 stops before it, and says why rather than timing out.
                let refused = await #expect(throws: ProtocolError.self) { try await handle.waitUntilApplied(new.seq) }
                #expect(refused?.code == .versionUnreadable && refused?.message.contains("entry \(new.seq) of flow \"notes\" is at version 2") == true)
                await handle.close()

                // Restarted as build 1 against the newer log, node-2 stops before what it cannot
                // read (guarantee 3): the entry, or the coordinator's snapshot, whose states are in
                // the newer build's shape. It holds version 2 back again; its own emits are ordered.
                try await cluster.startNodes([2])
                let behind = try await cluster.client(2).emit(json: #"{"add":{"_0":"behind the wall"}}"#, to: "notes/a", wait: .ordered)
                let stopped = try await eventually("node-2 names what it cannot read", timeout: .seconds(15)) {
                    let nodes = try await Self.status(cluster)["nodes"] as? [[String: Any]] ?? []
                    return nodes.first { $0["name"] as? String == "node-2" && $0["alive"] as? Bool == true }?["unreadable"] as? [String: Any]
                }
                #expect(stopped["flow"] as? String == "notes" && stopped["version"] as? Int == 2 && stopped["reads"] as? Int == 1, "\(stopped)")
                let applied = try await cluster.client(2).status().applied
                #expect(applied < new.seq, "it applied nothing from the newer entry on: \(applied)")
                let problems = try await Self.status(cluster)["problems"] as? [String] ?? []
                #expect(problems.contains { $0.hasPrefix("node-2 must be upgraded: ") && $0.contains(#"flow "notes""#) && $0.contains("version 2") }, "\(problems)")
                #expect(try await Self.notesVersions(cluster)?["behind"] as? [String] == ["node-2"])
                let log = (try? String(contentsOfFile: try #require(cluster.node(2)).process.stderrPath, encoding: .utf8)) ?? ""
                #expect(log.components(separatedBy: "stopped applying").count == 2, "said once: \(log.suffix(2_000))")
                let coordinatorLog = (try? String(contentsOfFile: try #require(cluster.coordinatorProcess).stderrPath, encoding: .utf8)) ?? ""
                #expect(coordinatorLog.contains("VERSION UNREADABLE"), "\(coordinatorLog.suffix(2_000))")

                // Upgraded, it replays the log from the start and converges with the other; the
                // cluster agrees on version 2.
                let restarted = try #require(cluster.node(2))
                #expect(await restarted.process.stop() == .exited(0))
                cluster.setEnvironment(newer, ofNode: 2)
                try await cluster.startNodes([2])
                try await cluster.waitUntilApplied(behind.seq, timeout: .seconds(30))
                _ = try await cluster.waitUntilConverged()
                for id in cluster.nodeIDs {
                    let notes = try await cluster.client(id).query("notes/a", minApplied: behind.seq).decode(Notes.self).notes
                    #expect(notes == ["from build 1", "from build 2", "behind the wall"], "node-\(id): \(notes)")
                }
                let agreed = try await eventually("the cluster agrees on version 2", timeout: .seconds(15)) {
                    try await Self.notesVersions(cluster).flatMap { $0["agreed"] as? Int == 2 ? $0 : nil }
                }
                #expect(agreed["behind"] as? [String] == [], "\(agreed)")
                let upgraded = try await cluster.client(2).emit(json: #"{"add":{"_0":"both at build 2"}}"#, to: "notes/a", wait: .applied)
                #expect(upgraded.seq > behind.seq)
            }
        }

        /// A sample exported from a running cluster of build 1 replays through build 2 (its steps
        /// read version 1) and fails through build 3 (which dropped them), naming the entries
        /// (docs/VERSIONING.md, "The replay check").
        @Test func aSampleExportedFromTheClusterPassesTheNextBuildAndFailsOneWithoutItsSteps() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            try await TestCluster.run(nodes: 2, options: options) { cluster in
                var last: UInt64 = 0
                for (key, note) in [("a", "one"), ("b", "two"), ("a", "three")] {
                    last = try await cluster.client(1).emit(json: #"{"add":{"_0":"\#(note)"}}"#, to: "notes/\(key)", wait: .ordered).seq
                }
                try await cluster.waitUntilApplied(last)
                let runner = CommandRunner(directory: cluster.directory)
                let sample = "\(cluster.directory)/sample.json"
                let node = try #require(cluster.node(1)).clientEndpoint
                let export = try await runner.run(cluster.binary, ["export", "--node", node, "--out", sample])
                #expect(export.exitCode == 0 && export.stdout.contains("wrote \(sample): entries 1 to \(last) (\(last))"), "\(export)")
                let written = try ReplaySample(contentsOf: URL(fileURLWithPath: sample))
                #expect(written.end.map(\.address) == ["notes/a", "notes/b"] && written.end.first?.state == #"{"notes":["one","three"]}"#, "\(written.end)")

                func check(build: String) async throws -> CommandResult {
                    try await runner.run("/usr/bin/env", ["FLOWKIT_TESTBED_BUILD=\(build)", cluster.binary, "replay-check", sample])
                }
                let same = try await check(build: "1")
                #expect(same.exitCode == 0 && same.stdout.hasPrefix("passed: \(last) entries replayed over 2 instances"), "\(same)")
                let next = try await check(build: "2")
                #expect(next.exitCode == 0 && next.stdout.hasPrefix("passed:"), "\(next)")
                let stepless = try await check(build: "3")
                #expect(stepless.exitCode == 6, "\(stepless)")
                #expect(stepless.stdout.contains("\(last) entries do not decode"), "\(stepless)")
                #expect(stepless.stdout.contains("entry 1 (notes/a, version 1) does not decode"), "\(stepless)")
            }
        }

        /// A coordinator whose build cannot read its own log refuses to start, naming the flow and
        /// the version, instead of ordering after an entry its replica cannot apply (guarantee 2).
        @Test func aCoordinatorWhoseBuildCannotReadItsLogDoesNotStart() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            let newer = ["FLOWKIT_TESTBED_BUILD": "2"]
            options.coordinatorEnvironment = newer
            options.nodeEnvironment = [1: newer]
            try await TestCluster.run(nodes: 1, durable: true, options: options) { cluster in
                // Ordered once the new coordinator has heard from every node (its first node timeout).
                let new = try await cluster.client(1).emit(json: #"{"add":{"_0":"from build 2"}}"#, to: "notes/a", wait: .ordered)
                let coordinator = try #require(cluster.coordinatorProcess)
                #expect(await coordinator.stop() == .exited(0))
                cluster.setEnvironment([:], ofCoordinator: "coordinator")
                let refused = await #expect(throws: (any Error).self) { try await cluster.startCoordinator() }
                let said = "\(refused.map { "\($0)" } ?? "")"
                #expect(said.contains("this coordinator's build cannot read its log, so it does not start"), "\(said.suffix(2_000))")
                #expect(said.contains("entry \(new.seq) of flow \"notes\" is at version 2"), "\(said.suffix(2_000))")
                // Its own build again, it starts and goes on.
                cluster.setEnvironment(newer, ofCoordinator: "coordinator")
                try await cluster.startCoordinator()
                let next = try await cluster.client(1).emit(json: #"{"add":{"_0":"after"}}"#, to: "notes/a", wait: .applied)
                #expect(next.seq > new.seq)
            }
        }

        /// A node whose build no longer reads the log's oldest entries (its steps from them were
        /// dropped) stops, naming the flow and the version: no wait would make them readable.
        @Test func aNodeWhoseStepsDoNotReachTheLogDoesNotRun() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            options.nodeEnvironment = [2: ["FLOWKIT_TESTBED_BUILD": "3"]]
            try await TestCluster.run(nodes: 1, options: options) { cluster in
                let old = try await cluster.client(1).emit(json: #"{"add":{"_0":"from build 1"}}"#, to: "notes/a", wait: .applied)
                try await cluster.startNodes([2])
                let node2 = try #require(cluster.node(2)).process
                #expect(await node2.waitForExit(timeout: .seconds(20)), "node-2 of build 3 runs on")
                #expect(node2.status.map { $0 != 0 } == true, "\(node2)")
                let log = node2.stderrText()
                #expect(log.contains("this node's build cannot read the log, so it does not run"), "\(log.suffix(2_000))")
                // The entry, or the snapshot's state it left, whichever way the node joined.
                #expect(log.contains(#"flow "notes""#) && log.contains("is at version 1 and this build reads versions 2 to 3"), "\(log.suffix(2_000))")
                #expect(old.seq == 1)
            }
        }

        /// So does a replicated coordinator, checking its copy of the log when it starts: it never
        /// stands by with a log it could not lead from.
        @Test func aReplicatedCoordinatorWhoseBuildCannotReadItsLogDoesNotStart() async throws {
            var options = TestCluster.Options()
            options.binary = "flowkit-testbed"
            options.coordinators = 3
            let newer = ["FLOWKIT_TESTBED_BUILD": "2"]
            options.coordinatorEnvironment = newer
            options.nodeEnvironment = [1: newer]
            try await TestCluster.run(nodes: 1, options: options) { cluster in
                let new = try await cluster.client(1).emit(json: #"{"add":{"_0":"from build 2"}}"#, to: "notes/a", wait: .applied)
                let leader = try await cluster.leader().id
                let standby = try #require(try cluster.coordinatorIDs.first { $0 != leader })
                // Every coordinator holds the entry before the standby stops.
                try await cluster.waitUntilInSync(standby)
                #expect(await try cluster.coordinatorProcess(standby).stop() == .exited(0))
                cluster.setEnvironment([:], ofCoordinator: standby)
                let refused = await #expect(throws: (any Error).self) { try await cluster.startCoordinator(id: standby) }
                let said = "\(refused.map { "\($0)" } ?? "")"
                #expect(said.contains("this coordinator's build cannot read its log, so it does not start"), "\(said.suffix(2_000))")
                #expect(said.contains("entry \(new.seq) of flow \"notes\" is at version 2"), "\(said.suffix(2_000))")
                cluster.setEnvironment(newer, ofCoordinator: standby)
                try await cluster.startCoordinator(id: standby)
                try await cluster.waitUntilInSync(standby)
            }
        }
    }
}
