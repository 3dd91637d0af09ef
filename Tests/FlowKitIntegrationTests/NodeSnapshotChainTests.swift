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
            // Ten of them change between snapshots: deltas of ten each follow the base (a base
            // taken during the 300's population is followed by a delta of the rest, and a new base
            // once the deltas hold half as many: rounds go on until two deltas follow one).
            var (last, rounds) = (UInt64(0), 0)
            while rounds < 4 || (files("delta-").count < 2 && rounds < 20) {
                for key in 0..<10 { last = try await cluster.client(1).emit(json: increment, to: "counter/c\(key)", wait: .applied).seq }
                rounds += 1
                try await Task.sleep(for: .milliseconds(400))
            }
            let deltas = files("delta-").count
            #expect(deltas >= 2, "\(rounds) rounds")

            await cluster.killNode(1)
            try await cluster.startNodes([1])
            let resumed = try Self.resumedLine(cluster, node: 1)
            #expect(resumed.contains("flowkit.deltas=\(deltas)"), "\(resumed)")
            #expect(resumed.contains("flowkit.instances=300"), "\(resumed)")

            let statuses = try await cluster.waitUntilConverged()
            #expect(statuses[1]!.applied >= last)
            for key in [0, 9, 10, 299] {
                let states = try await [cluster.client(1).query("counter/c\(key)"), cluster.client(2).query("counter/c\(key)")]
                #expect(String(decoding: states[0].json, as: UTF8.self) == "{\"count\":\(key < 10 ? 1 + rounds : 1)}", "counter/c\(key)")
                #expect(states[0].digest == states[1].digest, "counter/c\(key)")
            }
        }
    }
}

/// A node's local snapshot copied a thousand instances per turn of its loop while entries keep
/// arriving: its instances are at different seqs. Killed right after saving one and restarted, the node skips the
/// entries its copy holds already, reports no digest until every instance is past them, and
/// converges with no divergence raised.
extension ClusterProcessTests {
    @Test func aNodeKilledUnderLoadResumesFromASnapshotCopiedOverSeveralTurns() async throws {
        var options = TestCluster.Options()
        options.nodesWithDataDirectory = [1]
        options.allNodeArguments = ["--snapshot-ms", "500"]
        options.nodeArguments[1] = ["--log-level", "debug"]
        try await TestCluster.run(nodes: 2, options: options) { cluster in
            let increment = #"{"increment":{}}"#
            let counters = 5_000
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<16 {
                    group.addTask {
                        for key in stride(from: lane, to: counters, by: 16) {
                            _ = try await cluster.client(1).emit(json: increment, to: "counter/c\(key)", wait: .ordered)
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Entries keep arriving while node 1 copies its snapshots (thousands of instances
            // changed between two: several turns each); each kill under that load.
            let load = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for lane in 0..<8 {
                        group.addTask {
                            var sent = 0
                            while !Task.isCancelled {
                                // Anywhere: some land on instances a copy has yet to take.
                                let key = (lane &+ sent &* 8) &* 2_654_435_761 % counters
                                _ = try? await cluster.client(2).emit(json: increment, to: "counter/c\(key)", wait: .ordered)
                                sent += 1
                            }
                            return sent
                        }
                    }
                    return try await group.reduce(0, +)
                }
            }
            // Killed right after it saved a snapshot whose instances are at different seqs (its
            // debug log says so), before the next: the restart resumes from that one.
            var resumedLines: [Substring] = []
            for _ in 0..<5 {
                _ = try await eventually("node 1 saved a snapshot copied over several turns", timeout: .seconds(60), every: .milliseconds(20)) {
                    let log = try String(contentsOfFile: try #require(cluster.node(1)?.process).stderrPath, encoding: .utf8)
                    return log.split(separator: "\n").last { $0.contains("local snapshot") && $0.contains("saved") }.flatMap { Self.fuzzy($0) ? () : nil }
                }
                await cluster.killNode(1)
                try await cluster.startNodes([1])
                resumedLines.append(try Self.resumedLine(cluster, node: 1))
                if Self.fuzzy(resumedLines.last!) { break }
            }
            load.cancel()
            let sent = try await load.value
            #expect(resumedLines.contains { Self.fuzzy($0) }, "no restore was of a copy whose instances were at different seqs:\n\(resumedLines.joined(separator: "\n"))")

            let statuses = try await cluster.waitUntilConverged(timeout: .seconds(60))
            #expect(statuses[1]!.instances == counters)
            var total = 0
            for key in 0..<counters {
                let state = try await cluster.client(1).query("counter/c\(key)")
                total += try #require(Int(String(decoding: state.json, as: UTF8.self).filter(\.isNumber)))
            }
            // Every ordered entry counted once: the population, and what the load got ordered
            // (those cut off by a kill may or may not have been).
            #expect(total == Int(statuses[1]!.applied), "\(total) counted, \(statuses[1]!.applied) applied, \(sent) sent")
            let coordinatorLog = try String(contentsOfFile: try #require(cluster.coordinatorProcess).stderrPath, encoding: .utf8)
            #expect(!coordinatorLog.contains("replicas diverged"), "\(coordinatorLog.suffix(2_000))")
        }
    }

    /// The line in which node `id`, as last started, says it resumed from a local snapshot.
    static func resumedLine(_ cluster: TestCluster, node id: Int) throws -> Substring {
        let log = try String(contentsOfFile: try #require(cluster.node(id)?.process).stderrPath, encoding: .utf8)
        return try #require(
            log.split(separator: "\n").first { $0.contains("resumed from a local snapshot") }, "node \(id) did not resume from its chain:\n\(log.suffix(2_000))"
        )
    }

    /// Whether a "resumed from a local snapshot" line names a copy whose instances were at
    /// different seqs (consistent only from a seq past the one it resumed from).
    static func fuzzy(_ line: Substring) -> Bool {
        func value(_ key: String) -> UInt64? {
            line.split(separator: " ").first { $0.hasPrefix("flowkit.\(key)=") }.flatMap { UInt64($0.split(separator: "=").last ?? "") }
        }
        guard let seq = value("seq"), let consistentFrom = value("consistentFrom") else { return false }
        return consistentFrom > seq
    }
}
