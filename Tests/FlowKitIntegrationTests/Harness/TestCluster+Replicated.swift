@testable import FlowKitCluster
import FlowKitCommands
import FlowKitProcesses
import FlowKitTools
import Foundation
import Synchronization

/// Replicated coordinators as real processes: an etcd the test starts, and `flowkit coordinator
/// --id cN --coordinators … --etcd …` for each, with data directories kept across restarts.
struct ReplicatedCoordinators: Sendable {
    var etcd: EtcdServer
    var endpoints: [String: CoordinatorEndpoints]
    var processes: [String: ChildProcess] = [:]
    var prefix = "/flowkit/test"

    var ids: [String] { endpoints.keys.sorted() }

    /// Every coordinator but the one at `endpoints`.
    func others(than endpoints: CoordinatorEndpoints) -> [CoordinatorEndpoints] {
        ids.compactMap { self.endpoints[$0] }.filter { $0 != endpoints }
    }

    var election: EtcdElection {
        get throws { EtcdElection(client: try EtcdClient(endpoints: [etcd.clientURL]), prefix: prefix) }
    }
}

extension TestCluster {
    /// Starts etcd and ``Options/coordinators`` coordinators on free ports; the nodes are told
    /// `c1` first and the others after.
    func startReplicatedCoordinators() async throws {
        let etcd = try await EtcdServer.start(
            directory: directory, host: lab?.address("etcd") ?? "127.0.0.1", clientPort: lab == nil ? 0 : 2379, peerPort: lab == nil ? 0 : 2380,
            namespace: lab?.namespace("etcd")
        )
        var endpoints: [String: CoordinatorEndpoints] = [:]
        for index in 1...options.coordinators {
            // Submit, publish and sync on consecutive ports, the convention the flags use.
            let host = lab?.address("c\(index)") ?? "127.0.0.1"
            let base = lab == nil ? try FreePorts.run(3) : 7400
            endpoints["c\(index)"] = CoordinatorEndpoints(
                submit: "tcp://\(host):\(base)", publish: "tcp://\(host):\(base + 1)", sync: "tcp://\(host):\(base + 2)"
            )
        }
        state.withLock { state in
            state.replicated = ReplicatedCoordinators(etcd: etcd, endpoints: endpoints)
            state.endpoints = endpoints["c1"]
        }
        for id in endpoints.keys.sorted() { try await startCoordinator(id: id) }
        _ = try await leader(timeout: .seconds(15))
    }

    /// Starts (or restarts) replicated coordinator `id`.
    func startCoordinator(id: String) async throws {
        guard let replicated = state.withLock({ $0.replicated }), let own = replicated.endpoints[id] else {
            throw HarnessError("no replicated coordinator \(id)")
        }
        let list = replicated.ids.map { "\($0)=\(replicated.endpoints[$0]!.submit)" }.joined(separator: ",")
        let arguments = [
            "coordinator", "--id", id, "--coordinators", list, "--etcd", replicated.etcd.clientURL, "--etcd-prefix", replicated.prefix,
            "--data-dir", "\(directory)/\(id)-data", "--log-level", logLevel,
        ] + options.coordinatorArguments
        let process = try ChildProcess.testChild(
            executable: binary, arguments: arguments, name: nextName(id), directory: directory, environment: coordinatorEnvironment(of: id),
            namespace: lab?.namespace(id)
        )
        state.withLock { state in
            state.history.append(process)
            state.replicated?.processes[id] = process
        }
        let line = try await process.waitForLine(prefix: "READY ", timeout: Self.readyTimeout)
        guard line.contains(own.submit.replacingOccurrences(of: "/", with: "\\/")) || line.contains(own.submit) else {
            throw HarnessError("\(process) bound other endpoints than \(own): \(line)")
        }
    }

    /// The members of ``Options/networkLab``'s lab: etcd, the coordinators, and nodes n1…n9.
    static func labMembers(_ options: Options) -> [(name: String, host: Int)] {
        [("etcd", 2)] + (1...max(options.coordinators, 1)).map { ("c\($0)", 2 + $0) } + (1...9).map { ("n\($0)", 10 + $0) }
    }

    /// The leader etcd names, waiting for one.
    func leader(timeout: Duration = .seconds(10)) async throws -> LeaderRecord {
        guard let replicated = state.withLock({ $0.replicated }) else { throw HarnessError("the coordinators are not replicated") }
        let election = try replicated.election
        return try await eventually("a coordinator leads", timeout: timeout) { try await election.read().0.leader }
    }

    /// The leader etcd names once it is not `old`, waiting for one.
    func leader(after old: LeaderRecord, timeout: Duration = .seconds(10)) async throws -> LeaderRecord {
        guard let replicated = state.withLock({ $0.replicated }) else { throw HarnessError("the coordinators are not replicated") }
        let election = try replicated.election
        return try await eventually("a coordinator other than \(old.id) leads", timeout: timeout) {
            try await election.read().0.leader.flatMap { $0.id != old.id && $0.epoch > old.epoch ? $0 : nil }
        }
    }

    /// The replicated coordinators' ids, `c1`….
    var coordinatorIDs: [String] {
        get throws {
            guard let replicated = state.withLock({ $0.replicated }) else { throw HarnessError("the coordinators are not replicated") }
            return replicated.ids
        }
    }

    /// Replicated coordinator `id`'s process.
    func coordinatorProcess(_ id: String) throws -> ChildProcess {
        guard let process = state.withLock({ $0.replicated?.processes[id] }) else { throw HarnessError("no process for coordinator \(id)") }
        return process
    }

    /// The ids etcd holds as in sync (eligible to lead).
    func inSync() async throws -> Set<String> {
        guard let replicated = state.withLock({ $0.replicated }) else { throw HarnessError("the coordinators are not replicated") }
        return Set(try await replicated.election.read().0.eligible ?? [])
    }

    /// Waits until `id` is in sync again (it caught up and the leader wrote it back into the set).
    func waitUntilInSync(_ id: String, timeout: Duration = .seconds(20)) async throws {
        _ = try await eventually("\(id) is in sync", timeout: timeout) { try await self.inSync().contains(id) ? true : nil }
    }

    /// `kill -9` of etcd.
    func killEtcd() async throws {
        guard let etcd = state.withLock({ $0.replicated?.etcd }) else { throw HarnessError("no etcd") }
        await etcd.process.kill9()
    }

    /// Starts etcd again on its ports and data.
    func restartEtcd() async throws {
        guard let etcd = state.withLock({ $0.replicated?.etcd }) else { throw HarnessError("no etcd") }
        let restarted = try await etcd.restarted(directory: directory)
        state.withLock { $0.replicated?.etcd = restarted }
    }

    /// `kill -9` of the leader; returns its record.
    func killLeader() async throws -> LeaderRecord {
        let leader = try await leader()
        guard let process = state.withLock({ $0.replicated?.processes[leader.id] }) else {
            throw HarnessError("no process for the leader \(leader.id)")
        }
        await process.kill9()
        return leader
    }

    /// Points ``coordinatorEndpoints`` (what the log is read from) at the leader.
    func readFromLeader() async throws {
        let leader = try await leader()
        state.withLock { $0.endpoints = leader.endpoints }
    }

    /// SIGTERM to every replicated coordinator, then etcd killed.
    ///
    /// - Returns: Coordinators that did not exit cleanly (those killed on purpose are not listed).
    func stopReplicatedCoordinators() async -> [String] {
        guard let replicated = state.withLock({ $0.replicated }) else { return [] }
        var unclean: [String] = []
        for process in replicated.processes.values where process.isRunning {
            let outcome = await process.stop()
            if !outcome.isClean { unclean.append("\(process): \(outcome)") }
        }
        await replicated.etcd.process.kill9()
        return unclean
    }
}
