@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import FlowKitLog
import FlowKitProcesses
import Foundation
import Logging
import Testing

/// One accepted message must never stop the cluster: the wedge an independent client found (a
/// SUBMIT just under the frame limit, ordered, then too large for every message that carries
/// it), the one admission rule at both walls, entries no message can carry, and a status that
/// tells the truth. Raw frames where that is how the problem was found.
extension ClusterProcessTests {
    static let frameLimit = Int(TransportOptions().maxMessageBytes)
    static let maxEvent = AdmissionLimits.defaultMaxEventBytes

    /// A `kv` event of exactly `bytes` bytes of JSON.
    /// Built as bytes: a 64 MiB `String(repeating:)` took seconds of a debug build, on the clock
    /// of the cluster's timeouts.
    static func kvEvent(bytes: Int) -> [UInt8] {
        let prefix = Array(#"{"set":{"key":"k","value":""#.utf8)
        let suffix = Array(#""}}"#.utf8)
        var event = [UInt8](repeating: UInt8(ascii: "x"), count: bytes)
        event.replaceSubrange(0..<prefix.count, with: prefix)
        event.replaceSubrange(bytes - suffix.count..<bytes, with: suffix)
        return event
    }

    /// A SUBMIT of one event, as a node that skipped its own check would send it.
    static func submit(_ submission: UInt64, address: String, payload: [UInt8], session: UInt64 = 77) -> [[UInt8]] {
        SubmitMessage(
            origin: 900, session: session,
            submissions: [Submission(submission: submission, kind: .event, codec: .json, submittedAt: 1, address: address, payload: payload)]
        ).frames
    }

    static func ack(_ dealer: RawDealer, for frames: [[UInt8]]) async throws -> (ack: AckMessage, item: AckMessage.Ack) {
        try await dealer.send(frames)
        guard let reply = try await dealer.receive(timeout: .seconds(10)) else { throw HarnessError("no ACK from the coordinator") }
        let ack = try AckMessage(frames: reply)
        guard let item = ack.acks.first else { throw HarnessError("an empty ACK") }
        return (ack, item)
    }

    /// The wedge: a SUBMIT whose records frame is 16 bytes under the 64 MiB frame limit was
    /// ordered, and its entry, 32 bytes larger, could then travel in no message: no node applied
    /// anything after it, ever. Now it is refused as oversize, as is everything over the largest
    /// event; the cluster keeps applying; and an event at the limit is ordered, published,
    /// repaired by RANGE and carried in a snapshot (split across chunks) to a node that joins late.
    @Test func anOversizedSubmitIsRefusedAndAnEntryAtTheLimitTravelsEverywhere() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let submit = try await RawDealer(endpoint: endpoints.submit, logger: cluster.logger)
            defer { Task { await submit.close() } }
            try await submit.sayHello(node: 900, session: 77)
            let wedge = Self.frameLimit - 16 - 4 - 30 - "kv/wedge".utf8.count
            for (index, size) in [wedge, 5 << 20, (1 << 20) + 4_096, Self.maxEvent + 1].enumerated() {
                let frames = Self.submit(UInt64(index + 1), address: "kv/wedge", payload: Self.kvEvent(bytes: size))
                if index == 0 { #expect(frames[1].count == Self.frameLimit - 16) }
                let (_, item) = try await Self.ack(submit, for: frames)
                #expect(item.status == .refused && item.reason == .oversize, "an event of \(size) bytes: \(item)")
            }

            // The cluster keeps applying.
            let after = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/after-wedge", wait: .applied)
            #expect(after.seq == 1, "nothing refused was ordered")
            try await cluster.waitUntilApplied(after.seq)

            // An event at the limit, through a node and straight at the coordinator.
            let (_, direct) = try await Self.ack(submit, for: Self.submit(10, address: "kv/direct", payload: Self.kvEvent(bytes: Self.maxEvent)))
            #expect(direct.status == .ordered, "\(direct)")
            let atLimit = try await cluster.client(1).emit(
                payload: Self.kvEvent(bytes: Self.maxEvent), codec: .json, to: "kv/big", wait: .applied
            )
            // Published: the other node applies it.
            let states = try await cluster.states(of: "kv/big", minApplied: atLimit.seq)
            #expect(Set(states.values.map(\.digest)).count == 1)
            #expect(try states[2]?.decode(KeyValueFlow.State.self).entries["k"]?.utf8.count == Self.maxEvent - 30)
            // Repaired by RANGE: the entry alone fits its frame.
            let sync = try await RawDealer(endpoint: endpoints.sync, logger: cluster.logger)
            try await sync.send(RangeRequest(request: 1, from: atLimit.seq, to: atLimit.seq, maxCount: 10).frames)
            let range = try #require(try await sync.receive(timeout: .seconds(10)))
            await sync.close()
            #expect(range[1].count <= Self.frameLimit)
            #expect(try RangeMessage(frames: range).entries.map(\.payload) == [Self.kvEvent(bytes: Self.maxEvent)])
            // Carried in a snapshot: a node that joins now starts from one, its 1 MiB state split.
            try await cluster.startNodes([3])
            let joined = try await cluster.client(3).query("kv/big", minApplied: atLimit.seq)
            #expect(joined.digest == states[1]?.digest)
            let log = (try? String(contentsOfFile: try #require(cluster.node(3)).process.stderrPath, encoding: .utf8)) ?? ""
            #expect(log.contains("joined through a snapshot"), "node-3 joined otherwise: \(log.suffix(2_000))")
            let status = try await cluster.client(3).status()
            #expect(status.applied == atLimit.seq && status.entriesSkipped == 0)
        }
    }

    /// An entry already in the log that no message can carry (written before the limits, here by
    /// hand into a stopped coordinator's log) is served as a quarantined stand-in: every node skips
    /// it the same way, applies what follows, and the status and an alarm say so.
    @Test func anEntryNoMessageCanCarryIsQuarantinedNotAWedge() async throws {
        try await TestCluster.run(nodes: 2, durable: true) { cluster in
            let before = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/before", wait: .applied)
            try await cluster.waitUntilApplied(before.seq)
            let coordinator = try #require(cluster.coordinatorProcess)
            #expect(await coordinator.stop() == .exited(0))

            // Written as an older version could have: an event as large as the frame limit, then
            // an ordinary one.
            var logger = Logger(label: "test")
            logger.logLevel = .error
            var options = SegmentLog.Options()
            options.payloadFormat = Entry.logPayloadFormat
            let log = try SegmentLog(directory: cluster.directory + "/coordinator-data/log", options: options, logger: logger)
            let large = Entry(
                seq: before.seq + 1, epoch: before.epoch, kind: .event, codec: .json, origin: 1, session: 5, submission: 1,
                submittedAt: 1, committedAt: 1, address: "kv/huge", payload: Self.kvEvent(bytes: Self.frameLimit)
            )
            let ordinary = Entry(
                seq: before.seq + 2, epoch: before.epoch, kind: .event, codec: .json, origin: 1, session: 5, submission: 2,
                submittedAt: 1, committedAt: 1, address: "counter/after", payload: Array(#"{"increment":{}}"#.utf8)
            )
            try log.append([LogRecord(seq: large.seq, payload: large.encoded), LogRecord(seq: ordinary.seq, payload: ordinary.encoded)])
            _ = try log.commit()
            log.close()

            try await cluster.startCoordinator()
            try await cluster.waitUntilApplied(ordinary.seq, timeout: .seconds(30))
            for id in cluster.nodeIDs {
                let status = try await cluster.client(id).status()
                #expect(status.entriesSkipped == 1, "node-\(id): \(status)")
                #expect(try await cluster.client(id).query("counter/after").decode(CounterFlow.State.self).count == 1)
                let missing = await #expect(throws: ProtocolError.self) { try await cluster.client(id).query("kv/huge") }
                #expect(missing?.code == .notFound)
            }
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let result = try await CommandRunner(directory: cluster.directory).run(
                cluster.binary, ["status", "--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish, "--json"]
            )
            #expect(result.exitCode == 0, "\(result)")
            let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
            #expect(json?["quarantined"] as? Int == 1, "\(result.stdout)")
            let log2 = (try? String(contentsOfFile: try #require(cluster.coordinatorProcess).stderrPath, encoding: .utf8)) ?? ""
            #expect(log2.contains("QUARANTINED"), "\(log2.suffix(2_000))")
            // A node that joins afterwards converges with the others.
            try await cluster.startNodes([3])
            _ = try await cluster.waitUntilConverged()
        }
    }

    /// A retry acknowledged as a duplicate after a coordinator restart names the epoch that
    /// ordered it, so `flowkit emit` prints the right one.
    @Test func aDuplicateAfterARestartIsAcknowledgedWithTheEpochThatOrderedIt() async throws {
        try await TestCluster.run(nodes: 1, durable: true) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let first = try await RawDealer(endpoint: endpoints.submit, logger: cluster.logger)
            try await first.sayHello(node: 900, session: 4_242)
            let increment = Array(#"{"increment":{}}"#.utf8)
            let (ordered, item) = try await Self.ack(first, for: Self.submit(1, address: "counter/epoch", payload: increment, session: 4_242))
            await first.close()
            #expect(item.status == .ordered)
            await cluster.killCoordinator()
            try await cluster.startCoordinator()
            let again = try await RawDealer(endpoint: endpoints.submit, logger: cluster.logger)
            defer { Task { await again.close() } }
            try await again.sayHello(node: 900, session: 4_242)
            let (duplicate, retried) = try await Self.ack(again, for: Self.submit(1, address: "counter/epoch", payload: increment, session: 4_242))
            #expect(retried.status == .duplicate && retried.seq == item.seq, "\(retried)")
            #expect(duplicate.epoch == ordered.epoch, "the duplicate names epoch \(duplicate.epoch); epoch \(ordered.epoch) ordered it")
            let (next, new) = try await Self.ack(again, for: Self.submit(2, address: "counter/epoch", payload: increment, session: 4_242))
            #expect(new.status == .ordered && next.epoch != ordered.epoch, "a new entry is ordered in the new term")
        }
    }

    /// `flowkit status` exits 0 only when every node is alive, at the head, with the same digest:
    /// right after an emit it waits for reports that cover it; a node that stays behind (here one
    /// that cannot reach the sync socket, so cannot catch up) is stalled, alarmed, and exit 6.
    @Test func statusTellsTheTruth() async throws {
        var options = TestCluster.Options()
        options.coordinatorArguments = ["--stall-ms", "2000"]
        options.nodeArguments[3] = ["--coordinator-sync", "tcp://127.0.0.1:9"]
        try await TestCluster.run(nodes: 2, options: options) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let runner = CommandRunner(directory: cluster.directory)
            let node1 = try #require(cluster.node(1)).clientEndpoint
            func flowkit(_ arguments: [String]) async throws -> CommandResult {
                try await runner.run(cluster.binary, arguments, timeout: .seconds(30))
            }
            let statusArguments = ["status", "--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish]

            // --json speaks JSON's types.
            let emitted = try await flowkit(["emit", "counter/s", #"{"increment":{}}"#, "--node", node1, "--json"])
            #expect(emitted.exitCode == 0, "\(emitted)")
            let ordered = try JSONSerialization.jsonObject(with: Data(emitted.stdout.utf8)) as? [String: Any]
            #expect(ordered?["seq"] as? Int == 1 && ordered?["applied"] is Bool && ordered?["epoch"] is Int, "\(emitted.stdout)")
            let cancelled = try await flowkit(["cancel", "timer/s", "--id", "timer", "--node", node1, "--json"])
            let cancel = try JSONSerialization.jsonObject(with: Data(cancelled.stdout.utf8)) as? [String: Any]
            #expect(cancel?["seq"] as? Int == 2 && cancel?["applied"] as? Bool == true, "\(cancelled)")
            // An unknown event case is named.
            let explode = try await flowkit(["emit", "counter/s", #"{"explode":{}}"#, "--node", node1])
            #expect(explode.exitCode == 4 && explode.stderr.contains(#"no event case named "explode""#), "\(explode)")

            // Right after an emit: healthy once the reports cover it.
            _ = try await flowkit(["emit", "counter/s", #"{"increment":{}}"#, "--node", node1])
            let healthy = try await flowkit(statusArguments)
            #expect(healthy.exitCode == 0, "\(healthy)")
            #expect(healthy.stdout.contains("healthy"), "\(healthy)")

            // A node that cannot catch up: alive, behind, stalled.
            let monitor = try await ClusterMonitor(
                publishEndpoint: endpoints.publish, topics: [ControlTopic.alarm, ControlTopic.heartbeat], logger: cluster.logger
            )
            let events = monitor.events
            let (heard, hear) = AsyncStream.makeStream(of: Void.self)
            let waiter = Task { () -> Alarm? in
                for try await event in events {
                    if case .heartbeat = event { hear.yield() }
                    if case .alarm(let alarm) = event, alarm.kind == .nodeStalled { return alarm }
                }
                return nil
            }
            // Subscribed once a heartbeat (ten a second) arrives.
            for await _ in heard { break }
            try await cluster.startNodes([3])
            let timer = Task {
                try await Task.sleep(for: .seconds(15))
                waiter.cancel()
            }
            let alarm = try? await waiter.value
            timer.cancel()
            await monitor.close()
            #expect(alarm?.message.contains("node-3") == true, "\(String(describing: alarm))")
            let stalled = try await flowkit(statusArguments + ["--json", "--settle", "1"])
            #expect(stalled.exitCode == 6, "\(stalled)")
            let json = try JSONSerialization.jsonObject(with: Data(stalled.stdout.utf8)) as? [String: Any]
            let nodes = json?["nodes"] as? [[String: Any]] ?? []
            #expect(nodes.first { $0["name"] as? String == "node-3" }?["stalled"] as? Bool == true, "\(stalled.stdout)")
            #expect(json?["healthy"] as? Bool == false)
            #expect((json?["problems"] as? [String] ?? []).contains { $0.contains("node-3 is stalled") }, "\(stalled.stdout)")
        }
    }
}
