#if canImport(Glibc)
import Glibc
#endif
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import FlowKitTools
import Foundation
import Synchronization
import Testing
import ZeroMQ

extension ReliabilityTests {
    /// The coordinator's data directory on a small tmpfs, filled up under load: the coordinator
    /// refuses submissions (ACK status refused, reason 14) and raises an ALARM `logUnavailable`;
    /// once space is freed it takes writes again, nothing acknowledged is lost or doubled, and a
    /// `kill -9` and restart afterwards recovers the same log (nothing was corrupted).
    @Test(.enabled(if: TmpfsMount.isPossible, "needs root to mount a tmpfs"))
    func fullDiskRefusesWritesThenResumesWithoutLoss() async throws {
        let mount = try TmpfsMount(megabytes: 48)
        defer { mount.unmount() }
        var options = TestCluster.Options()
        options.coordinatorArguments = ["--data-dir", "\(mount.path)/coordinator"]
        try await TestCluster.run(nodes: 2, options: options) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let alarms = try await ProbeSocket(type: .sub, endpoint: endpoints.publish, curve: nil, logger: cluster.logger)
            try await alarms.subscribe("$alarm")
            let submitter = try await ProbeSocket(type: .dealer, endpoint: endpoints.submit, curve: nil, logger: cluster.logger)
            defer { Task { await alarms.close(); await submitter.close() } }
            try await submitter.sayHello(node: 99, session: 4242)
            let ledger = "ledger/disk"
            var acknowledged: [(id: String, seq: UInt64)] = []
            var failed: [String] = []
            func emit(_ id: String, node: Int = 1) async {
                do {
                    let ordered = try await cluster.client(node).emit(json: #"{"record":{"_0":"\#(id)"}}"#, to: ledger)
                    acknowledged.append((id, ordered.seq))
                } catch {
                    failed.append(id)
                }
            }
            for number in 1...50 { await emit("before-\(number)", node: 1 + number % 2) }
            #expect(failed.isEmpty)

            // Fill the tmpfs, then submit straight to the coordinator, as a node does.
            let filled = try mount.fill()
            #expect(filled > 0)
            // The last page of the log's segment may still have room: submit batches until the
            // log needs a new page and is refused. What is acknowledged before that is in the log.
            var refusal: AckMessage.Ack?
            var rawNumber = 0
            for attempt in 1...200 where refusal == nil {
                let submissions = (0..<20).map { _ in
                    rawNumber += 1
                    return Submission(
                        submission: UInt64(rawNumber), kind: .event, codec: .json, submittedAt: 1, address: ledger,
                        payload: Array(#"{"record":{"_0":"raw-\#(rawNumber)"}}"#.utf8)
                    )
                }
                try await submitter.send(SubmitMessage(origin: 99, session: 4242, submissions: submissions).frames)
                guard let reply = try await submitter.receive(timeout: .seconds(5)) else {
                    Issue.record("the coordinator did not answer SUBMIT #\(attempt)")
                    break
                }
                let ack = try AckMessage(frames: reply)
                for item in ack.acks {
                    switch item.status {
                    case .ordered, .duplicate: acknowledged.append(("raw-\(item.submission)", item.seq))
                    case .refused: refusal = refusal ?? item
                    }
                }
            }
            let refused = try #require(refusal, "the coordinator kept acknowledging submissions on a full disk")
            #expect(refused.reason == .internalError, "refused with \(String(describing: refused.reason))")
            // The first alarm about the log (the submitter, a node that never reports, is alarmed
            // down after 3 s).
            var alarmMessage: AlarmMessage?
            while alarmMessage?.alarm.kind != .logUnavailable, let alarm = try await alarms.receive(timeout: .seconds(5)) {
                alarmMessage = try AlarmMessage(frames: alarm)
            }
            #expect(alarmMessage?.alarm.kind == .logUnavailable, "ALARM: \(String(describing: alarmMessage))")
            let coordinatorLog = cluster.coordinatorProcess?.stderrText() ?? ""
            #expect(coordinatorLog.contains("the log refused a commit"), "\(coordinatorLog.suffix(2_000))")

            // A client of a node is refused too, with the coordinator's reason.
            // (Larger than a page, so it cannot fit in what is left of the segment's last one.)
            let whileFullID = "while-full-" + String(repeating: "x", count: 8_192)
            let whileFull = await Result { try await cluster.client(2).emit(json: #"{"record":{"_0":"\#(whileFullID)"}}"#, to: ledger) }
            switch whileFull {
            case .success(let ordered):
                Issue.record("an emit was acknowledged at \(ordered.seq) while the coordinator's disk was full")
            case .failure(let error):
                failed.append("while-full")
                let code = (error as? ProtocolError)?.code
                #expect(code == .internalError && "\(error)".contains("log refused the write"), "the client was told: \(error)")
            }

            // Free the space: submissions are taken again (the coordinator retries its log).
            mount.free()
            let resumed = try await eventually("emits are acknowledged again", timeout: .seconds(20), every: .milliseconds(200)) {
                try await cluster.client(1).emit(json: #"{"record":{"_0":"after-0"}}"#, to: ledger)
            }
            acknowledged.append(("after-0", resumed.seq))
            for number in 1...50 { await emit("after-\(number)", node: 1 + number % 2) }
            #expect(failed.count == 1, "emits failed after the disk was freed: \(failed)")

            try await Self.expectLedger(cluster, ledger, acknowledged: acknowledged, refusedRaw: true)
            // The emit refused while the disk was full stayed queued on its node, which said so
            // ("it may still be ordered"): it is ordered once the log takes writes, exactly once.
            // Until then the head can still move, so wait for it before reading the head.
            try await eventually("the refused emit is ordered once the disk has room", timeout: .seconds(20), every: .milliseconds(200)) {
                let ids = try await cluster.client(1).query(ledger).decode(LedgerFlow.State.self).ids
                guard ids.filter({ $0 == whileFullID }).count == 1 else { throw HarnessError("not yet ordered") }
            }

            // Nothing corrupted: a kill -9 and restart recovers the same log.
            let head = try await cluster.client(1).status().knownHead
            await cluster.killCoordinator()
            try await cluster.startCoordinator()
            let next = try await eventually("the restarted coordinator orders", timeout: .seconds(20), every: .milliseconds(200)) {
                try await cluster.client(1).emit(json: #"{"record":{"_0":"restarted"}}"#, to: ledger)
            }
            #expect(next.seq == head + 1, "after recovery the head is \(next.seq - 1), before it was \(head)")
            acknowledged.append(("restarted", next.seq))
            try await Self.expectLedger(cluster, ledger, acknowledged: acknowledged, refusedRaw: true)
        }
    }

    /// Every acknowledged id once on every node, no id twice, and no submission the coordinator
    /// refused.
    static func expectLedger(_ cluster: TestCluster, _ address: String, acknowledged: [(id: String, seq: UInt64)], refusedRaw: Bool) async throws {
        let head = acknowledged.map(\.seq).max() ?? 0
        for id in cluster.nodeIDs {
            let state = try await cluster.client(id).query(address, minApplied: head)
            let ids = try state.decode(LedgerFlow.State.self).ids
            let counts = Dictionary(ids.map { ($0, 1) }, uniquingKeysWith: +)
            #expect(counts.values.allSatisfy { $0 == 1 }, "node \(id) holds ids twice: \(counts.filter { $0.value > 1 })")
            let missing = acknowledged.filter { counts[$0.id] == nil }
            #expect(missing.isEmpty, "node \(id) lacks acknowledged ids: \(missing.prefix(10))")
            if refusedRaw {
                let acknowledgedIDs = Set(acknowledged.map(\.id))
                let orderedRefused = ids.filter { $0.hasPrefix("raw-") && !acknowledgedIDs.contains($0) }
                #expect(orderedRefused.isEmpty, "refused submissions were ordered: \(orderedRefused.prefix(10))")
            }
        }
    }
}

/// A tmpfs of a given size on a temporary directory, for filling a disk on purpose. Unmounted by
/// ``unmount()`` (lazily, so a process still holding a file cannot keep it).
struct TmpfsMount {
    let path: String

    init(megabytes: Int) throws {
        path = try Reliability.temporaryDirectory("tmpfs")
        let result = Self.mount(["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path])
        guard result == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            throw HarnessError("mount -t tmpfs failed (\(result)): this test needs root")
        }
    }

    /// Whether tmpfs can be mounted here (root, and mount(8) permitted).
    static var isPossible: Bool {
        guard getuid() == 0, let probe = try? TmpfsMount(megabytes: 1) else { return false }
        probe.unmount()
        return true
    }

    /// Writes a filler file until the file system is full.
    ///
    /// - Returns: The bytes written.
    func fill() throws -> Int {
        let fd = open("\(path)/filler", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw HarnessError("cannot create the filler: errno \(errno)") }
        defer { close(fd) }
        let chunk = [UInt8](repeating: 0xFF, count: 64 << 10)
        var total = 0
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written <= 0 { break }
            total += written
        }
        return total
    }

    /// Deletes the filler.
    func free() {
        unlink("\(path)/filler")
    }

    func unmount() {
        _ = Self.mount(["-l", path], program: "/bin/umount")
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func mount(_ arguments: [String], program: String = "/bin/mount") -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: FileManager.default.isExecutableFile(atPath: program) ? program : "/usr" + program)
        process.arguments = arguments
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
