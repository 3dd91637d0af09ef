#if canImport(Glibc)
import Glibc
#endif
@_spi(Wire) @testable import FlowKitCluster
import FlowKitProcesses
import FlowKitTools
import Foundation
import Logging
import Testing
import ZeroMQ

/// Faults among replicated coordinators other than the leader's death, each under the ledger load
/// and each ending with the same audit: a leader paused past its lease, a standby killed, etcd
/// killed, a standby's disk lost.
extension MultiProcessTests {
    @Suite("Coordinator faults", .serialized, .timeLimit(.minutes(3)))
    struct CoordinatorFaultTests {
        static func options() -> TestCluster.Options {
            var options = TestCluster.Options()
            options.coordinators = 3
            return options
        }

        /// SIGSTOP of the leader for longer than its lease: another takes over. A submission sent
        /// only to the sleeping leader, and what it publishes once woken (SIGCONT), show that it
        /// acts on nothing in its old term: no acknowledgement, no heartbeat made after it woke, no
        /// entry that is not committed. It rejoins as a standby, and is in sync again.
        @Test func aPausedLeaderActsOnNothingWhenItWakesAndRejoinsAsAStandby() async throws {
            try await TestCluster.run(nodes: 2, durable: true, options: Self.options()) { cluster in
                let (emits, woken) = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 50) }
                        let woken = try await pauseTheLeader(cluster, load: load)
                        return (await load.stop(), woken)
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                try await MultiProcessTests.ReplicatedCoordinatorTests.audit(cluster, emits: emits, label: "paused leader")
                // What the woken leader published in its old term is committed: in the log, as published.
                let head = try await cluster.waitUntilConverged()[1]!.applied
                let log = Dictionary(uniqueKeysWithValues: try await cluster.readLog(through: head).map { ($0.seq, $0) })
                for entry in woken.entries {
                    #expect(log[entry.seq] == entry, "the woken leader published seq \(entry.seq), which the log holds otherwise")
                }
                // Thrown, not just recorded, so the processes' logs are kept for a look.
                let marker = log.values.first { $0.address == Self.marker.address }
                try #require(marker == nil, "the submission only the paused leader got was committed: seq \(marker?.seq ?? 0) of epoch \(marker?.epoch ?? 0)")
            }
        }

        static let marker = Submission(
            submission: 1, kind: .event, codec: .json, submittedAt: 0, address: "ledger/marker", payload: Array(#"{"record":{"_0":"marker"}}"#.utf8)
        )

        /// What a woken leader published in its old term.
        struct Woken {
            var entries: [Entry] = []
        }

        private func pauseTheLeader(_ cluster: TestCluster, load: LedgerLoad) async throws -> Woken {
            let old = try await cluster.leader()
            let process = try cluster.coordinatorProcess(old.id)
            let publications = try await ProbeSocket(type: .sub, endpoint: old.endpoints.publish, curve: nil, logger: cluster.logger)
            try await publications.subscribe("")
            let submitter = try await ProbeSocket(type: .dealer, endpoint: old.endpoints.submit, curve: nil, logger: cluster.logger)
            defer { Task { await publications.close(); await submitter.close() } }
            try await submitter.sayHello(node: 99, session: 1)
            // Subscribed once a heartbeat (ten a second) arrives; the submitter was welcomed.
            guard try await publications.receive(timeout: .seconds(5)) != nil else { throw HarnessError("no publication from \(old.id)") }

            process.signal(SIGSTOP)
            // The stop is only pending when kill returns; until every thread has stopped, the
            // leader may still order what arrives.
            guard await process.waitUntilStopped(timeout: .seconds(5)) else { throw HarnessError("\(old.id) did not stop within 5 s of SIGSTOP") }
            let pausedAt = WallClock.micros()
            // Sent while it sleeps: it reads this when it wakes, and may not acknowledge it.
            try await submitter.send(SubmitMessage(origin: 99, session: 1, submissions: [Self.marker]).frames)
            let next = try await cluster.leader(after: old)
            print("paused leader: \(old.id) (epoch \(old.epoch)) paused; \(next.id) leads in epoch \(next.epoch)")
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30, timeout: .seconds(20)) }
            // Whatever it published before the pause has arrived meanwhile.
            while try await publications.receive(timeout: .milliseconds(200)) != nil {}

            process.signal(SIGCONT)
            var woken = Woken()
            var late: [String] = []
            let until = ContinuousClock.now + .seconds(3)
            while ContinuousClock.now < until {
                guard let frames = try await publications.receive(timeout: .milliseconds(200)), frames.count >= 2,
                    let type = try? WireHeader.read(frames[1], expecting: .entries, .heartbeat, .clusterStatus, .alarm).0
                else { continue }
                switch type {
                case .heartbeat:
                    let heartbeat = try HeartbeatMessage(frames: frames)
                    // Made before the pause, it may leave the socket's queue only now; made after, it is acting.
                    if heartbeat.epoch <= old.epoch, heartbeat.time >= pausedAt { late.append("HEARTBEAT epoch \(heartbeat.epoch) head \(heartbeat.head)") }
                case .entries:
                    let message = try EntriesMessage(frames: frames)
                    if message.epoch <= old.epoch { woken.entries += message.entries }
                case .clusterStatus:
                    let status = try ClusterStatusMessage(frames: frames).status
                    if status.epoch <= old.epoch { late.append("CLUSTER_STATUS epoch \(status.epoch) head \(status.head)") }
                default:
                    break
                }
            }
            #expect(late.isEmpty, "the woken leader acted in its old term: \(late.prefix(5))")
            var answers: [String] = []
            while let reply = try await submitter.receive(timeout: .milliseconds(300)) {
                if let ack = try? AckMessage(frames: reply) {
                    answers.append("ACK epoch \(ack.epoch) \(ack.acks)")
                    #expect(ack.acks.allSatisfy { $0.status != .ordered }, "the woken leader acknowledged a submission: \(ack)")
                } else if let redirect = try? NotLeaderMessage(frames: reply) {
                    answers.append("NOT_LEADER \(redirect.id) epoch \(redirect.epoch)")
                    #expect(redirect.id != old.id, "the woken leader names itself the leader: \(redirect)")
                }
            }
            print("paused leader: woken, it answered the submission sent while it slept with \(answers.isEmpty ? "nothing" : answers.joined(separator: ", ")); published \(woken.entries.count) old-term entries, \(late.count) late messages")
            try await cluster.waitUntilInSync(old.id)
            #expect(try await cluster.leader().id == next.id, "the woken leader took the lead back")
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
            return woken
        }

        /// `kill -9` of a standby: commits wait at most the lag timeout, then go on without it; it
        /// restarts, catches up and is in sync again. Then `kill -9` of etcd: the leader stops
        /// acknowledging before its lease could have run out, and nothing is acknowledged while
        /// etcd is down; etcd back, a leader is elected and acknowledgements resume.
        @Test func killingAStandbyAndThenEtcdUnderLoadLosesNothing() async throws {
            try await TestCluster.run(nodes: 2, durable: true, options: Self.options()) { cluster in
                let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 50) }
                        try await killAStandby(cluster, load: load)
                        try await killEtcd(cluster, load: load)
                        return await load.stop()
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                try await MultiProcessTests.ReplicatedCoordinatorTests.audit(cluster, emits: emits, label: "standby and etcd killed")
            }
        }

        private func killAStandby(_ cluster: TestCluster, load: LedgerLoad) async throws {
            let leader = try await cluster.leader()
            let standby = try #require(try await cluster.inSync().subtracting([leader.id]).sorted().first)
            try await cluster.coordinatorProcess(standby).kill9()
            let at = ContinuousClock.now
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 1) }
            let stall = ContinuousClock.now - at
            _ = try await eventually("\(standby) left the in-sync set", timeout: .seconds(10)) { try await cluster.inSync().contains(standby) ? nil : true }
            print("standby killed: \(standby); acknowledgements on every node again after \(stall)")
            #expect(stall < .seconds(5), "commits waited \(stall) for a dead standby (lag timeout 1 s)")
            try await cluster.startCoordinator(id: standby)
            try await cluster.waitUntilInSync(standby)
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
        }

        private func killEtcd(_ cluster: TestCluster, load: LedgerLoad) async throws {
            let leader = try await cluster.leader()
            try await cluster.killEtcd()
            let killedAt = ContinuousClock.now
            // The lease is 2 s, counted from when it was last asked for; the leader stops acting
            // an eighth before. Give it that, and the answers in flight, then count.
            try await Task.sleep(for: .seconds(3))
            let counted = cluster.nodeIDs.map { load.acknowledged(by: $0) }
            try await Task.sleep(for: .seconds(3))
            let during = zip(cluster.nodeIDs.map { load.acknowledged(by: $0) }, counted).map { $0 - $1 }
            #expect(during.allSatisfy { $0 == 0 }, "acknowledged while etcd was down, past the lease: \(during)")
            try await cluster.restartEtcd()
            let restartedAt = ContinuousClock.now
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 1, timeout: .seconds(30)) }
            let next = try await cluster.leader()
            print("etcd killed for \(restartedAt - killedAt): no acknowledgement from 3 s to 6 s after; back, \(next.id) leads in epoch \(next.epoch) (was \(leader.id) in \(leader.epoch)), acknowledging again after \(ContinuousClock.now - restartedAt)")
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
        }

        /// A standby's data directory deleted while it is down: restarted empty, it copies the
        /// whole log from the leader, is in sync again, and serves the same committed entries.
        @Test func aStandbyWhoseDiskIsLostRebuildsFromTheLeader() async throws {
            try await TestCluster.run(nodes: 2, durable: true, options: Self.options()) { cluster in
                let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 100) }
                        let leader = try await cluster.leader()
                        let standby = try #require(try await cluster.inSync().subtracting([leader.id]).sorted().first)
                        try await cluster.coordinatorProcess(standby).kill9()
                        try FileManager.default.removeItem(atPath: "\(cluster.directory)/\(standby)-data")
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 50) }
                        try await cluster.startCoordinator(id: standby)
                        try await cluster.waitUntilInSync(standby)
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
                        let emits = await load.stop()
                        // The rebuilt copy serves what the leader does.
                        let head = try await cluster.waitUntilConverged()[1]!.applied
                        try await cluster.readFromLeader()
                        let fromLeader = try await cluster.readLog(through: head)
                        let fromStandby = try await eventually("\(standby) serves up to \(head)", timeout: .seconds(10)) {
                            try? await cluster.readLog(through: head, at: standby)
                        }
                        #expect(fromStandby == fromLeader, "the rebuilt \(standby) serves another log than the leader")
                        print("disk lost: \(standby) rebuilt \(fromStandby.count) entries from the leader")
                        return emits
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                try await MultiProcessTests.ReplicatedCoordinatorTests.audit(cluster, emits: emits, label: "standby disk lost")
            }
        }

        /// Every coordinator compacts its own log. A standby down (its data directory deleted,
        /// too) while the leader compacts past where it stood cannot fetch what it lacks: it
        /// installs the leader's snapshot, is in sync again, and serves the same log as the leader
        /// from there. Nothing acknowledged is lost (the ledgers; the log before the snapshot is
        /// gone on every coordinator).
        @Test func aStandbyBehindTheCompactedLogInstallsTheLeadersSnapshot() async throws {
            var options = Self.options()
            options.coordinatorArguments += ["--snapshot-every", "150", "--retain-entries", "30", "--segment-bytes", "8192"]
            try await TestCluster.run(nodes: 2, durable: true, options: options) { cluster in
                let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
                        let leader = try await cluster.leader()
                        let standby = try #require(try await cluster.inSync().subtracting([leader.id]).sorted().first)
                        try await cluster.coordinatorProcess(standby).kill9()
                        try FileManager.default.removeItem(atPath: "\(cluster.directory)/\(standby)-data")
                        // The leader snapshots and drops its first segments.
                        try await cluster.readFromLeader()
                        _ = try await eventually("\(leader.id) compacts its log", timeout: .seconds(60)) { () -> Bool? in
                            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 20) }
                            return try await cluster.isCompacted(at: leader.id) ? true : nil
                        }
                        try await cluster.startCoordinator(id: standby)
                        try await cluster.waitUntilInSync(standby, timeout: .seconds(30))
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
                        let emits = await load.stop()
                        let head = try await cluster.waitUntilConverged()[1]!.applied
                        let log = try String(contentsOfFile: try cluster.coordinatorProcess(standby).stderrPath, encoding: .utf8)
                        let installed = try #require(
                            log.split(separator: "\n").first { $0.contains("installed the leader's snapshot") },
                            "\(standby) did not install a snapshot: \(log.suffix(2_000))"
                        )
                        let field = try #require(installed.split(separator: " ").first { $0.hasPrefix("flowkit.seq=") }, "\(installed)")
                        let seq = try #require(UInt64(field.dropFirst("flowkit.seq=".count)), "\(installed)")
                        // The rebuilt copy serves what the leader does, after its snapshot: the newest
                        // entries, which both still keep (each keeps 30 behind its own snapshot, and
                        // both have compacted past the install since).
                        let from = max(seq + 1, head - 20)
                        let fromLeader = try await cluster.readLog(from: from, through: head)
                        let fromStandby = try await eventually("\(standby) serves up to \(head)", timeout: .seconds(10)) {
                            try? await cluster.readLog(from: from, through: head, at: standby)
                        }
                        #expect(fromStandby == fromLeader && !fromLeader.isEmpty, "the rebuilt \(standby) serves another log than the leader")
                        print("compacted: \(standby) installed the leader's snapshot at \(seq); both serve the same \(fromStandby.count) entries up to \(head)")
                        return emits
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                let statuses = try await cluster.waitUntilConverged()
                let addresses = Array(Set(emits.map(\.address))).sorted()
                let ledgers = try await cluster.ledgers(addresses, head: statuses[1]!.applied)
                for id in cluster.nodeIDs {
                    #expect(ledgers[id] == ledgers[1], "node \(id)'s ledgers differ from node 1's")
                    let audit = LedgerAudit(emits: emits, ledgers: ledgers[id] ?? [:])
                    if id == 1 { print("snapshot install: \(audit.summary)") }
                    #expect(audit.problems.isEmpty, "node \(id): \(audit.problems.prefix(10))")
                }
            }
        }

        /// Partitions in network namespaces (etcd, each coordinator and each node in one of its
        /// own): the leader cut from etcd (it stops acting within its lease, another leads, it
        /// rejoins when healed); the leader cut from both standbys (it keeps its lease, but with
        /// no standby in sync nothing commits: the `commitsBlocked` alarm, no acknowledgement,
        /// until healed); a standby cut off (commits go on without it; healed, it is in sync
        /// again). Nothing acknowledged is lost.
        @Test(.enabled(if: NetworkNamespaces.available, "network namespaces are not available: \(NetworkNamespaces.reason)"))
        func partitionsAmongTheCoordinatorsLoseNothing() async throws {
            var options = Self.options()
            options.networkLab = true
            try await TestCluster.run(nodes: 2, durable: true, options: options) { cluster in
                let lab = try #require(cluster.lab)
                let emits = try await cluster.withClients(timeout: .seconds(12)) { clients in
                    let load = LedgerLoad.start(clients: clients)
                    do {
                        for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 50) }
                        try await cutTheLeaderFromEtcd(cluster, lab: lab, load: load)
                        try await cutTheLeaderFromItsStandbys(cluster, lab: lab, load: load)
                        try await cutAStandbyOff(cluster, lab: lab, load: load)
                        return await load.stop()
                    } catch {
                        _ = await load.stop()
                        throw error
                    }
                }
                try await MultiProcessTests.ReplicatedCoordinatorTests.audit(cluster, emits: emits, label: "partitions")
            }
        }

        private func cutTheLeaderFromEtcd(_ cluster: TestCluster, lab: NetworkLab, load: LedgerLoad) async throws {
            let old = try await cluster.leader()
            try lab.setCut(old.id, from: ["etcd"], true)
            let at = ContinuousClock.now
            let next = try await cluster.leader(after: old)
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 1, timeout: .seconds(20)) }
            print("partitions: \(old.id) cut from etcd; \(next.id) leads in epoch \(next.epoch); every node acknowledged again after \(ContinuousClock.now - at)")
            try lab.setCut(old.id, from: ["etcd"], false)
            try await cluster.waitUntilInSync(old.id)
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
        }

        private func cutTheLeaderFromItsStandbys(_ cluster: TestCluster, lab: NetworkLab, load: LedgerLoad) async throws {
            let leader = try await cluster.leader()
            let standbys = try await cluster.inSync().subtracting([leader.id]).sorted()
            let alarms = try await ProbeSocket(type: .sub, endpoint: leader.endpoints.publish, curve: nil, logger: cluster.logger)
            try await alarms.subscribe("$alarm")
            try await alarms.subscribe("$hb")
            defer { Task { await alarms.close() } }
            // Subscribed once a heartbeat (ten a second) arrives.
            guard try await alarms.receive(timeout: .seconds(5)) != nil else { throw HarnessError("no heartbeat from \(leader.id)") }
            try lab.setCut(leader.id, from: standbys, true)
            // Commits wait the lag timeout (1 s), one standby leaves the set, the other cannot:
            // from then on nothing commits.
            try await Task.sleep(for: .seconds(3))
            let counted = cluster.nodeIDs.map { load.acknowledged(by: $0) }
            try await Task.sleep(for: .seconds(2))
            let during = zip(cluster.nodeIDs.map { load.acknowledged(by: $0) }, counted).map { $0 - $1 }
            #expect(during.allSatisfy { $0 == 0 }, "acknowledged with no standby in sync: \(during)")
            var blocked: Alarm?
            while blocked == nil, let frames = try await alarms.receive(timeout: .seconds(1)) {
                if let alarm = try? AlarmMessage(frames: frames).alarm, alarm.kind == .commitsBlocked { blocked = alarm }
            }
            #expect(blocked != nil, "no commitsBlocked alarm from \(leader.id)")
            try lab.setCut(leader.id, from: standbys, false)
            let healedAt = ContinuousClock.now
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 1, timeout: .seconds(20)) }
            print("partitions: \(leader.id) cut from \(standbys.joined(separator: ", ")): no acknowledgement from 3 s to 5 s after, alarm \(blocked?.message ?? "none"); healed, acknowledging again after \(ContinuousClock.now - healedAt)")
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
            for standby in standbys { try await cluster.waitUntilInSync(standby) }
        }

        private func cutAStandbyOff(_ cluster: TestCluster, lab: NetworkLab, load: LedgerLoad) async throws {
            let leader = try await cluster.leader()
            let standby = try #require(try await cluster.inSync().subtracting([leader.id]).sorted().first)
            try lab.setPartitioned(standby, true)
            let at = ContinuousClock.now
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 1) }
            let stall = ContinuousClock.now - at
            _ = try await eventually("\(standby) left the in-sync set", timeout: .seconds(10)) { try await cluster.inSync().contains(standby) ? nil : true }
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
            try lab.setPartitioned(standby, false)
            let healedAt = ContinuousClock.now
            try await cluster.waitUntilInSync(standby)
            print("partitions: \(standby) cut off: acknowledgements on every node again after \(stall); healed, in sync again after \(ContinuousClock.now - healedAt)")
            for id in cluster.nodeIDs { try await load.waitForAcknowledgements(by: id, more: 30) }
        }
    }
}
