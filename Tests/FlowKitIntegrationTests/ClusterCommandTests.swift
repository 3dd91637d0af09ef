#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import Foundation
import Logging
import Testing

/// Issue 6: `flowkit cluster` and the client commands, run the way a user runs them.
extension ClusterProcessTests {
    @Test func clusterCommandServesTheClientCommandsAndStopsCleanlyOnSIGINT() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo"] }, clusterDirectory: "cluster") { cluster in
            let file = try cluster.file()
            try await withNodeClients(file.nodes.map(\.clientEndpoint)) { clients in
                try await Self.exerciseClientCommands(cluster, clients: clients)
            }
            try await Self.stopWithSIGINT(cluster, file: file)
        }
    }

    private static func exerciseClientCommands(_ cluster: ClusterCommandProcess, clients: [ClusterClient]) async throws {
        let directory = cluster.directory
        let file = try cluster.file()
        #expect(file.nodes.map(\.name) == ["node-1", "node-2", "node-3"])
        // The cluster's children are exactly the processes cluster.json names.
        let children = Set(ProcessTable.children(of: cluster.process.pid).map(\.pid))
        #expect(children == Set(file.pids), "children of flowkit cluster: \(children), cluster.json: \(file.pids)")

        // emit at node-1 and node-2, state at node-3 and node-1: the same.
        let first = try await cluster.flowkit(["emit", "counter/a", #"{"increment":{}}"#, "--node", "node-1", "--json"])
        #expect(first.exitCode == 0, "\(first)")
        let second = try await cluster.flowkit(["emit", "counter/a", #"{"add":{"_0":5}}"#, "--node", "node-2", "--wait", "applied", "--json"])
        #expect(second.exitCode == 0, "\(second)")
        let seq = try #require(Self.jsonField("seq", in: second.stdout).flatMap { UInt64($0) }, "emit --json prints the seq: \(second.stdout)")
        let at3 = try await cluster.flowkit(["state", "counter/a", "--node", "node-3", "--min-seq", "\(seq)", "--json"])
        let at1 = try await cluster.flowkit(["state", "counter/a", "--node", "node-1", "--min-seq", "\(seq)", "--json"])
        #expect(at3.exitCode == 0 && at1.exitCode == 0, "\(at3)\n\(at1)")
        #expect(at3.stdout.contains(#""state":{"count":6}"#), "node-3: \(at3.stdout)")
        #expect(Self.jsonField("digest", in: at3.stdout) == Self.jsonField("digest", in: at1.stdout), "node-3 and node-1 agree: \(at3.stdout) \(at1.stdout)")

        // A timer started at node-1, cancelled from node-3: it stops on every node.
        let start = try await cluster.flowkit(["emit", "timer/t", #"{"toggleTimerButtonTapped":{}}"#, "--node", "node-1", "--wait", "applied"])
        #expect(start.exitCode == 0, "\(start)")
        _ = try await eventually("the timer ticked on node-2", timeout: .seconds(5), every: .milliseconds(100)) {
            try await clients[1].query("timer/t").decode(TimerFlow.State.self).secondsElapsed >= 1 ? true : nil
        }
        let cancel = try await cluster.flowkit(["cancel", "timer/t", "--id", "timer", "--node", "node-3"])
        #expect(cancel.exitCode == 0, "\(cancel)")
        // Ticks already sent are ordered after the cancel: look once nothing runs or waits to be sent.
        let head = try await settled(clients, runningEffects: 0)
        let stopped = try await clients.asyncMap { try await $0.query("timer/t", minApplied: head) }
        // A witness timer measures the wait in ticks, not in this machine's seconds: two of its
        // ticks on every node, and a timer still running would have ticked too.
        _ = try await clients[1].emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: "timer/witness", wait: .applied)
        for client in clients {
            _ = try await eventually("the witness timer ticked twice", timeout: .seconds(10), every: .milliseconds(100)) {
                try await client.query("timer/witness").decode(TimerFlow.State.self).secondsElapsed >= 2 ? true : nil
            }
        }
        _ = try await clients[1].emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: "timer/witness", wait: .applied)
        let later = try await clients.asyncMap { try await $0.query("timer/t", minApplied: try await settled(clients, runningEffects: 0)) }
        for index in clients.indices {
            #expect(later[index].lastSeq == stopped[index].lastSeq && later[index].json == stopped[index].json, "node-\(index + 1): \(stopped[index].text) then \(later[index].text)")
            #expect(later[index].json == later[0].json, "node-\(index + 1) and node-1 agree on timer/t")
        }

        // monitor --json sees entries emitted while it runs, in seq order.
        // With --heartbeats it prints a heartbeat 10 times a second: once one is out, it is subscribed.
        let monitor = try ChildProcess.testChild(
            executable: cluster.binary,
            arguments: ["monitor", "--json", "--duration", "2", "--heartbeats", "--cluster-dir", cluster.clusterDirectory],
            name: "monitor", directory: directory
        )
        try await monitor.waitForOutput(containing: #""type":"heartbeat""#, timeout: .seconds(2))
        var emitted: [UInt64] = []
        for index in 0..<4 {
            emitted.append(try await clients[index % 3].emit(json: #"{"increment":{}}"#, to: "counter/m").seq)
        }
        #expect(await monitor.waitForExit(timeout: .seconds(10)) && monitor.status == 0, "monitor: \(monitor.stderrReport())")
        let lines = monitor.stdoutText.split(separator: "\n")
        let seqs = lines.filter { $0.contains(#""type":"entry""#) }.compactMap { Self.jsonField("seq", in: String($0)).flatMap(UInt64.init) }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, "entries in seq order: \(seqs)")
        #expect(Set(emitted).isSubset(of: Set(seqs)), "the monitor saw \(seqs), the emits were ordered at \(emitted)")

        // status: every node alive, exit 0.
        // A report from every node after the last emit: polled, not slept for.
        let status = try await eventually("flowkit status shows every node alive", every: .milliseconds(200)) {
            let status = try await cluster.flowkit(["status"])
            let lines = status.stdout.split(separator: "\n")
            return ["node-1", "node-2", "node-3"].allSatisfy { name in lines.contains { $0.hasPrefix(name) && $0.contains("alive") } } ? status : nil
        }
        #expect(status.exitCode == 0, "\(status)")

    }

    private static func stopWithSIGINT(_ cluster: ClusterCommandProcess, file: ClusterCommandProcess.File) async throws {
        // SIGINT to the cluster process alone: it stops its children and exits 0.
        cluster.process.signalProcessOnly(SIGINT)
        let exited = await cluster.process.waitForExit(timeout: .seconds(15))
        #expect(exited && cluster.process.status == 0, "flowkit cluster on SIGINT: \(cluster.process.status.map(ChildProcess.describe) ?? "still running")")
        let left = file.pids.filter { !ProcessTable.isGone($0) }
        #expect(left.isEmpty, "children still running after the cluster stopped: \(left)")
        #expect(!FileManager.default.fileExists(atPath: cluster.clusterDirectory + "/cluster.json"), "cluster.json removed")
        let output = (try? String(contentsOfFile: cluster.process.stdoutPath, encoding: .utf8)) ?? ""
        #expect(output.contains("stopped; no child process left"), "\(output.suffix(500))")
    }

    /// The supervisor: node-2 killed with -9 is restarted (a new process on its endpoint, the
    /// view says so) and the cluster is healthy again; node-1 stopped cleanly (SIGTERM, exit 0) is
    /// left stopped, as systemd's `Restart=on-failure` would.
    @Test func clusterCommandRestartsACrashedNodeAndLeavesAStoppedOneStopped() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo", "--nodes", "2"] }, clusterDirectory: "cluster") { cluster in
            let before = try cluster.file()
            let crashed = try #require(before.nodes.first { $0.name == "node-2" })
            kill(crashed.pid, SIGKILL)
            let restarted = try await eventually("node-2 restarted", timeout: .seconds(20), every: .milliseconds(200)) {
                let node = try cluster.file().nodes.first { $0.name == "node-2" }
                return node.map { $0.pid != crashed.pid && !ProcessTable.isGone($0.pid) } == true ? node : nil
            }
            #expect(restarted.clientEndpoint == crashed.clientEndpoint, "on the same endpoint")
            let emitted = try await cluster.flowkit(["emit", "counter/s", #"{"increment":{}}"#, "--node", "node-2", "--wait", "applied"])
            #expect(emitted.exitCode == 0, "\(emitted)")
            let output = { (try? String(contentsOfFile: cluster.process.stdoutPath, encoding: .utf8)) ?? "" }
            #expect(output().contains("supervisor: node-2 exited (killed by signal 9): restarting in 1.0 seconds"), "\(output().suffix(800))")
            #expect(output().contains("supervisor: node-2 restarted (pid \(restarted.pid), restart 1 in a row)"), "\(output().suffix(800))")

            let stopped = try #require(before.nodes.first { $0.name == "node-1" })
            kill(stopped.pid, SIGTERM)
            _ = try await eventually("node-1 left stopped", timeout: .seconds(15), every: .milliseconds(200)) {
                output().contains("supervisor: node-1 stopped (exit code 0): left stopped") ? true : nil
            }
            try await Task.sleep(for: .seconds(2))
            #expect(try cluster.file().nodes.first { $0.name == "node-1" }?.pid == stopped.pid, "node-1 was not started again")
            #expect(ProcessTable.isGone(stopped.pid))
        }
    }

    /// `kill -9` of `flowkit cluster`: its children die too, each within its orphan grace (a
    /// watchdog thread that sees the parent gone asks for a graceful stop, then exits regardless,
    /// so a graceful stop that hangs cannot keep it alive). One node is frozen (SIGSTOP) across
    /// the kill and thawed two seconds later: it notices then, and goes too.
    @Test func clusterCommandKilledTakesItsChildrenWithIt() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo", "--nodes", "2"] }, clusterDirectory: "cluster") { cluster in
            let file = try cluster.file()
            let pids = file.pids
            #expect(pids.count == 3)
            let frozen = file.nodes[1].pid
            cluster.process.signalProcessOnly(SIGKILL)
            // Frozen once its group is orphaned (earlier, the kernel would hang it up at once).
            #expect(await cluster.process.waitForExit(timeout: .seconds(5)))
            kill(frozen, SIGSTOP)
            try await Task.sleep(for: .seconds(2))
            kill(frozen, SIGCONT)
            // Bounded: 100 ms to notice, a graceful stop of at most 5 s, then exit; twice that and
            // more for a loaded machine.
            let gone = try? await eventually("every child of the killed cluster is gone", timeout: .seconds(15)) {
                pids.allSatisfy(ProcessTable.isGone) ? true : nil
            }
            #expect(gone == true, "children that outlived kill -9 of their cluster: \(pids.filter { !ProcessTable.isGone($0) })")
        }
    }

    /// `flowkit cluster --coordinators 3`: etcd and three coordinators as its children; status
    /// names the leader and every standby in sync; after `kill -9` of the leader, emits go on in a
    /// larger epoch, status names the new leader and the dead one as out of sync (exit 6), and the
    /// monitor tells of the election. Stopping the cluster stops etcd too.
    @Test func clusterWithThreeCoordinatorsFollowsANewLeader() async throws {
        try await ClusterCommandProcess.run(
            { ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo", "--nodes", "2", "--coordinators", "3"] }, clusterDirectory: "cluster"
        ) { cluster in
            let file = try cluster.file()
            let coordinators = try #require(file.coordinators)
            #expect(coordinators.compactMap(\.id) == ["c1", "c2", "c3"])
            #expect(file.etcdPid != nil)
            let children = Set(ProcessTable.children(of: cluster.process.pid).map(\.pid))
            #expect(children == Set(file.pids), "children of flowkit cluster: \(children), cluster.json: \(file.pids)")

            let emitted = try await cluster.flowkit(["emit", "counter/a", #"{"increment":{}}"#, "--node", "node-1", "--wait", "applied"])
            #expect(emitted.exitCode == 0, "\(emitted)")
            let healthy = try await cluster.flowkit(["status", "--json"])
            #expect(healthy.exitCode == 0, "\(healthy)")
            let before = try Self.replication(in: healthy.stdout)
            #expect(before.coordinators.count == 3 && before.coordinators.allSatisfy(\.inSync), "\(healthy.stdout)")
            let leader = try #require(coordinators.first { $0.id == before.leader })

            kill(leader.pid, SIGKILL)
            let after = try await eventually("an emit is ordered by a new leader", timeout: .seconds(20)) {
                let result = try await cluster.flowkit(["emit", "counter/a", #"{"increment":{}}"#, "--node", "node-2", "--json", "--timeout", "3"])
                return result.exitCode == 0 ? result : nil
            }
            let output = { (try? String(contentsOfFile: cluster.process.stdoutPath, encoding: .utf8)) ?? "" }
            _ = try await eventually("the killed leader reaped and said", timeout: .seconds(10), every: .milliseconds(200)) {
                output().contains("supervisor: coordinator \(leader.id ?? "") exited (killed by signal 9): not restarted") ? true : nil
            }
            #expect(ProcessTable.stat(of: leader.pid)?.parent != cluster.process.pid, "reaped, not left a zombie")
            let epoch = try #require(Self.jsonField("epoch", in: after.stdout).flatMap { UInt32($0) })
            let degraded = try await eventually("status names a new leader", timeout: .seconds(10)) {
                let result = try await cluster.flowkit(["status", "--json", "--settle", "1"])
                return (try? Self.replication(in: result.stdout)).map { $0.leader != before.leader ? result : nil } ?? nil
            }
            let now = try Self.replication(in: degraded.stdout)
            #expect(degraded.exitCode == 6, "a dead coordinator is a problem: \(degraded)")
            #expect(degraded.stdout.contains("coordinator \(before.leader) is not in sync"), "\(degraded.stdout)")
            #expect(now.coordinators.first { $0.id == before.leader }?.inSync == false)
            #expect(Self.jsonField("epoch", in: degraded.stdout).flatMap { UInt32($0) } == epoch)
            let text = try await cluster.flowkit(["status", "--settle", "0"])
            #expect(text.stdout.contains("coordinators: leader \(now.leader)"), "\(text.stdout)")
            let monitor = try await cluster.flowkit(["monitor", "--duration", "2.5"])
            #expect(monitor.stdout.contains("leader: \(now.leader) in epoch \(epoch)"), "\(monitor.stdout)")
        }
    }

    private static func replication(in json: String) throws -> ReplicationStatus {
        struct Status: Decodable { var replication: ReplicationStatus }
        return try JSONDecoder().decode(Status.self, from: Data(json.utf8)).replication
    }

    /// The string or number value of `"key":` in a line of JSON (the CLI's flat objects).
    static func jsonField(_ key: String, in text: String) -> String? {
        guard let range = text.range(of: "\"\(key)\":") else { return nil }
        var rest = text[range.upperBound...]
        if rest.first == "\"" {
            rest = rest.dropFirst()
            return String(rest.prefix { $0 != "\"" })
        }
        return String(rest.prefix { $0.isNumber })
    }
}

/// Runs `body` with a client for each endpoint, closed on every path.
func withNodeClients<T>(_ endpoints: [String], timeout: Duration = .seconds(10), _ body: ([ClusterClient]) async throws -> T) async throws -> T {
    var logger = Logger(label: "flowkit.integration-tests")
    logger.logLevel = .error
    var clients: [ClusterClient] = []
    func closeAll() async { for client in clients { await client.close() } }
    do {
        for endpoint in endpoints { clients.append(try await ClusterClient(endpoint: endpoint, timeout: timeout, logger: logger)) }
        let result = try await body(clients)
        await closeAll()
        return result
    } catch {
        await closeAll()
        throw error
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

extension ClusterProcessTests {
    /// One node of a `flowkit cluster`, stopped (SIGTERM) and started again by hand from the command line
    /// `cluster.json` keeps for it (flowkit cluster --help, README): it comes back where the
    /// cluster knows it, catches up, and the cluster is healthy.
    @Test func aNodeRestartedByHandFromClusterJSONRejoins() async throws {
        try await ClusterCommandProcess.run({ ["--base-port", "0", "--fresh", "--dir", $0 + "/cluster", "--no-demo", "--no-dashboard"] }, clusterDirectory: "cluster") { cluster in
            let data = try #require(FileManager.default.contents(atPath: cluster.clusterDirectory + "/cluster.json"))
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let nodes = try #require(json["nodes"] as? [[String: Any]])
            let node2 = try #require(nodes.first { $0["name"] as? String == "node-2" })
            let command = try #require(node2["command"] as? [String], "cluster.json has no command for node-2: \(node2)")
            let pid = try #require(node2["pid"] as? Int32)
            #expect(command.contains(node2["clientEndpoint"] as? String ?? "?"), "the command binds where the cluster knows the node: \(command)")
            #expect(!command.contains { $0.hasSuffix(":*") }, "\(command)")

            // Stopped cleanly: the cluster's supervisor leaves it stopped (one killed, it restarts).
            kill(pid, SIGTERM)
            _ = try await eventually("node-2 gone", timeout: .seconds(10), every: .milliseconds(50)) { ProcessTable.isGone(pid) ? true : nil }
            let ordered = try await cluster.flowkit(["emit", "counter/by-hand", #"{"increment":{}}"#, "--node", "node-1", "--wait", "applied"])
            #expect(ordered.exitCode == 0, "\(ordered)")

            // As a person runs it from another shell.
            let node = try ChildProcess.testChild(executable: command[0], arguments: Array(command.dropFirst()), name: "node-2-by-hand", directory: cluster.directory)
            do {
                _ = try await node.waitForLine(prefix: "READY ", timeout: .seconds(30))
                // It catches up with what was ordered while it was down.
                _ = try await eventually("node-2 holds the entry ordered while it was down", timeout: .seconds(20), every: .milliseconds(200)) {
                    try await cluster.flowkit(["state", "counter/by-hand", "--node", "node-2", "--json"]).stdout.contains(#""count":1"#) ? true : nil
                }
                _ = try await eventually("a healthy cluster", timeout: .seconds(20), every: .milliseconds(500)) {
                    try await cluster.flowkit(["status", "--expect-nodes", "3"]).exitCode == 0 ? true : nil
                }
            } catch {
                await node.stop()
                throw error
            }
            await node.stop()
        }
    }

    /// A process given the `FLOWKIT_PARENT_PID` of a supervisor that is not its parent (a command
    /// line copied with its environment) says so and exits, rather than vanishing without a word.
    @Test func aStaleParentPidIsExplained() async throws {
        let directory = try ClusterCommandProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await CommandRunner(directory: directory).run(
            "/usr/bin/env", ["FLOWKIT_PARENT_PID=1", try TestCluster.findBinary(), "node", "--id", "1", "--coordinator", "tcp://127.0.0.1:1"]
        )
        #expect(result.status != 0)
        #expect(result.stderr.contains("FLOWKIT_PARENT_PID=1") && result.stderr.contains("unset FLOWKIT_PARENT_PID"), "\(result.stderr)")
    }
}
