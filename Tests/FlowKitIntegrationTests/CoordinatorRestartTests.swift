import FlowKitCluster
import FlowKitExamples
import Foundation
import Synchronization
import Testing

extension ClusterProcessTests {
    /// `kill -9` of the coordinator under load, then a restart on the same ports with the same
    /// data directory: the nodes resume by themselves, and every acknowledged increment is there
    /// exactly once.
    @Test func coordinatorKilledUnderLoadAndRestartedLosesNothingAcknowledged() async throws {
        try await TestCluster.run(nodes: 3, durable: true) { cluster in
            let addresses = (0..<5).map { "counter/r\($0)" }
            let warmup = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: addresses[0], wait: .applied)
            let oldEpoch = warmup.epoch

            struct Tally: Sendable {
                var acknowledged: [String: Int] = [:]
                /// Emits that failed: they may or may not have been ordered.
                var failed: [String: Int] = [:]
                var errors: [String] = []
                var maxSeq: UInt64 = 0
                /// Every acknowledgement: address, seq, epoch, and the node that gave it.
                var acks: [(String, UInt64, UInt32, Int)] = []
            }
            let running = RunningFlag()
            let clients = cluster.clients

            async let tallies: [Tally] = withThrowingTaskGroup(of: Tally.self) { group in
                for (index, client) in clients.enumerated() {
                    for worker in 0..<2 {
                        group.addTask {
                            var random = SplitMix64(state: UInt64(index * 2 + worker + 1))
                            var tally = Tally()
                            while running.isSet {
                                let address = addresses.randomElement(using: &random)!
                                do {
                                    let ordered = try await client.emit(json: #"{"increment":{}}"#, to: address)
                                    tally.acknowledged[address, default: 0] += 1
                                    tally.maxSeq = max(tally.maxSeq, ordered.seq)
                                    tally.acks.append((address, ordered.seq, ordered.epoch, index + 1))
                                } catch {
                                    tally.failed[address, default: 0] += 1
                                    tally.errors.append("\(error)")
                                }
                            }
                            return tally
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }

            try await Task.sleep(for: .seconds(1))
            await cluster.killCoordinator()
            try await Task.sleep(for: .milliseconds(500))
            try await cluster.startCoordinator()
            let restarted = ContinuousClock.now

            // Each node takes emits again, in the new term, without being told anything.
            for id in cluster.nodeIDs {
                let ordered = try await eventually("node \(id) orders emits again", timeout: .seconds(10), every: .milliseconds(100)) {
                    let ordered = try await cluster.client(id).emit(json: #"{"increment":{}}"#, to: "counter/probe")
                    return ordered.epoch > oldEpoch ? ordered : nil
                }
                #expect(ordered.seq > warmup.seq)
            }
            let resumedAfter = ContinuousClock.now - restarted
            #expect(resumedAfter < .seconds(5), "nodes resumed \(resumedAfter) after the restart")
            try await Task.sleep(for: .seconds(1))
            running.clear()
            let results = try await tallies

            var acknowledged: [String: Int] = [addresses[0]: 1]
            var failed: [String: Int] = [:]
            for tally in results {
                acknowledged.merge(tally.acknowledged, uniquingKeysWith: +)
                failed.merge(tally.failed, uniquingKeysWith: +)
            }
            let errors = results.flatMap(\.errors)
            let total = acknowledged.values.reduce(0, +)
            try #require(total > 50, "the load ran: \(total) increments acknowledged")
            // Emits in flight during the outage wait for the new coordinator, so none should fail.
            #expect(errors.isEmpty, "\(errors.count) emits failed: \(Set(errors))")

            // No two acknowledgements name the same position (a seq handed out twice, before and
            // after the crash, would mean one of the two entries is not in the log).
            let allAcks = results.flatMap(\.acks)
            var bySeq: [UInt64: [(String, UInt64, UInt32, Int)]] = [:]
            for ack in allAcks where ack.1 != 0 { bySeq[ack.1, default: []].append(ack) }
            let reused = bySeq.filter { $0.value.count > 1 }.sorted { $0.key < $1.key }
            #expect(reused.isEmpty, "seqs acknowledged twice: \(reused.prefix(10).map { "\($0.key): \($0.value)" })")
            #expect(allAcks.filter { $0.1 == 0 }.isEmpty, "acknowledged without a seq: \(allAcks.filter { $0.1 == 0 }.count)")

            // Node 1's known head may lag entries acknowledged at other nodes.
            let head = max(try await cluster.client(1).status().knownHead, results.map(\.maxSeq).max() ?? 0)
            // The log itself: every acknowledged emit is there, at the seq it was acknowledged with.
            let log = try await cluster.readLog(through: head)
            #expect(log.map(\.seq) == Array(1...head), "the log has every seq from 1 to \(head) once")
            var bySubmission: [String: Int] = [:]
            for entry in log { bySubmission["\(entry.origin)/\(entry.session)/\(entry.submission)", default: 0] += 1 }
            let twice = bySubmission.filter { $0.value > 1 }
            #expect(twice.isEmpty, "submissions ordered more than once: \(twice.prefix(10))")
            let logBySeq = Dictionary(log.map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
            let recoveredHead = cluster.coordinatorProcess.flatMap { Self.recoveredHead(in: $0.stderrText()) }
            var sessions: [Int: UInt64] = [:]
            for id in cluster.nodeIDs { sessions[id] = try await cluster.client(id).status().session }
            var missing: [String] = []
            var otherEpoch = 0
            for (address, seq, epoch, node) in allAcks where seq != 0 {
                guard let entry = logBySeq[seq], entry.address == address, entry.origin == UInt32(node), entry.session == sessions[node] else {
                    let found = logBySeq[seq].map { "\($0.address) epoch \($0.epoch) from node \($0.origin) session \($0.session) #\($0.submission)" } ?? "nothing"
                    missing.append("\(address) acknowledged by node \(node) at \(seq) in epoch \(epoch); the log has \(found)")
                    continue
                }
                // A duplicate's ACK carries the coordinator's current epoch, not the entry's.
                if entry.epoch != epoch { otherEpoch += 1 }
            }
            if otherEpoch > 0 { print("note: \(otherEpoch) acknowledgements named a later epoch than their entry's (duplicates resent after the restart)") }
            var logCounts: [String: Int] = [:]
            for entry in log { logCounts[entry.address, default: 0] += 1 }
            #expect(missing.isEmpty, "\(missing.count) acknowledged emits are not in the log where acknowledged (recovered head after the crash: \(recoveredHead.map(String.init) ?? "?")): \(missing.prefix(10))")
            try await cluster.waitUntilApplied(head)
            for address in addresses {
                let states = try await cluster.states(of: address, minApplied: head)
                let reference = try #require(states[1])
                for (id, state) in states {
                    #expect(state.text == reference.text && state.digest == reference.digest, "\(address) on node \(id)")
                }
                if Set(states.values.map(\.text)).count > 1 {
                    for id in cluster.nodeIDs {
                        print("diverged: \(address) on node \(id): \(states[id].map { "applied \($0.applied) last \($0.lastSeq) \($0.text)" } ?? "-")")
                        print("  status: \(try await cluster.client(id).status())")
                    }
                    let seqsHere = allAcks.filter { $0.0 == address }.map { "\($0.1)@\($0.2)" }
                    print("  acks for \(address): \(seqsHere)")
                }
                let count = try reference.decode(CounterFlow.State.self).count
                let acked = acknowledged[address, default: 0]
                let uncertain = failed[address, default: 0]
                #expect(count == logCounts[address, default: 0], "\(address): the state has \(count) increments, the log \(logCounts[address, default: 0])")
                #expect(count >= acked, "\(address): \(acked - count) acknowledged increments lost")
                #expect(count <= acked + uncertain, "\(address): \(count - acked) increments applied that were never acknowledged")
            }
            let probes = try await cluster.client(1).query("counter/probe", minApplied: head)
            #expect(try probes.decode(CounterFlow.State.self).count >= cluster.nodeIDs.count)

            let coordinatorLog = cluster.coordinatorProcess?.stderrText() ?? ""
            #expect(coordinatorLog.contains("recovered the log"), "the restarted coordinator recovered its log")
        }
    }
}

/// A flag many tasks read and one clears.
final class RunningFlag: Sendable {
    private let value = Atomic<Bool>(true)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func clear() { value.store(false, ordering: .relaxed) }
}

extension ClusterProcessTests {
    /// A coordinator without a data directory forgets its log when it restarts. Whatever the
    /// nodes make of that, an emit the cluster acknowledges as applied must be in the state.
    @Test func inMemoryCoordinatorRestartNeverAcknowledgesWhatNodesDrop() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let increment = #"{"increment":{}}"#
            var before = try await cluster.client(1).emit(json: increment, to: "counter/m", wait: .applied)
            for _ in 1..<5 { before = try await cluster.client(1).emit(json: increment, to: "counter/m", wait: .applied) }
            try await cluster.waitUntilApplied(before.seq)
            await cluster.killCoordinator()
            try await cluster.startCoordinator()

            let ordered: ClusterClient.Ordered
            do {
                ordered = try await cluster.client(2).emit(json: increment, to: "counter/m", wait: .applied)
            } catch let error as ProtocolError {
                // Refusing is honest: the cluster's history is gone.
                print("the emit after an in-memory restart was refused: \(error)")
                return
            }
            #expect(ordered.applied)
            let state = try await cluster.client(2).query("counter/m", minApplied: ordered.seq)
            let count = try state.decode(CounterFlow.State.self).count
            withKnownIssue(
                """
                the restarted in-memory coordinator starts again at seq 1 in the same epoch 1; the nodes, at applied \
                5, take the new entries for ones they already have: acknowledged 'applied' and silently dropped
                """
            ) {
                #expect(count == 6 || count == 1, "counter/m is \(count) after an increment acknowledged as applied at \(ordered)")
                #expect(state.lastSeq == ordered.seq, "the instance's last entry is \(state.lastSeq), the acknowledged one \(ordered.seq)")
                #expect(ordered.epoch != before.epoch, "the new coordinator runs in the old term \(ordered.epoch)")
            }
        }
    }
}

extension ClusterProcessTests {
    /// The `flowkit.last` a restarted coordinator logged with "recovered the log".
    static func recoveredHead(in log: String) -> UInt64? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("recovered the log") }),
            let range = line.range(of: "flowkit.last=")
        else { return nil }
        return UInt64(line[range.upperBound...].prefix { $0.isNumber })
    }
}
