#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitCluster
import FlowKitLog
import FlowKitProcesses
import FlowKitTools
import Testing

/// A real crash: a child process appends and commits in a loop, printing each committed seq,
/// and is killed with `SIGKILL` at a random moment. Every seq it reported must survive.
@Suite("SegmentLog crash safety")
struct SegmentLogCrashTests {
    static let directoryVariable = "FLOWKIT_LOG_CRASH_CHILD_DIR"
    static let durabilityVariable = "FLOWKIT_LOG_CRASH_CHILD_DURABILITY"
    static func childOptions(_ durability: SegmentLog.Durability) -> SegmentLog.Options {
        SegmentLog.Options(segmentBytes: 64 << 10, durability: durability, indexIntervalBytes: 512, writeBufferBytes: 2048)
    }

    @Test func committedRecordsSurviveKillNine() async throws {
        let dir = TemporaryDirectory("crash")
        let output = TemporaryDirectory("crash-output")
        var generator = SeededRandom(seed: UInt64(getpid()))
        var lastSeq: UInt64 = 0
        for round in 0..<6 {
            let durability: SegmentLog.Durability = round.isMultiple(of: 2) ? .synced : .relaxed
            // This test binary again, running only the child's test.
            let child = try ChildProcess.spawn(
                arguments: ["--testing-library", "swift-testing", "--filter", "crashChildEntry"],
                name: "crash-child-\(round)",
                directory: output.path,
                environment: [Self.directoryVariable: dir.path, Self.durabilityVariable: "\(durability)"]
            )
            // Let it commit a random number of batches, then kill it a random few microseconds later,
            // so the kill lands anywhere in append, write, sync or print.
            let commitsBeforeKill = Int.random(in: 1...300, using: &generator)
            let deadline = ContinuousClock.now + .seconds(20)
            while committed(child.stdoutText()) < commitsBeforeKill, child.isRunning, ContinuousClock.now < deadline {
                usleep(200)
            }
            if round == 0 {
                // The child holds the directory lock: this process may not open the log meanwhile.
                let locked = #expect(throws: LogError.self) { try SegmentLog(directory: dir.path, logger: quietLogger) }
                #expect(locked?.code == .locked)
            }
            usleep(UInt32.random(in: 0...3_000, using: &generator))
            child.signal(SIGKILL)
            let exited = await child.waitForExit(timeout: .seconds(10))
            let status = child.status ?? 0
            #expect(exited)
            let lines = child.stdoutText().split(separator: "\n").map(String.init)
            #expect(status & 0x7F == SIGKILL, "round \(round): the child was killed, not exited (status \(status))")

            let start = lines.first { $0.hasPrefix("START ") }.flatMap { UInt64($0.dropFirst(6)) }
            #expect(start == lastSeq + 1, "round \(round): the child continued from the last durable seq")
            let reported = lines.compactMap { $0.hasPrefix("COMMITTED ") ? UInt64($0.dropFirst(10)) : nil }
            #expect(reported.count >= commitsBeforeKill, "round \(round): child output \(lines.suffix(5))")

            let log = try SegmentLog(directory: dir.path, options: Self.childOptions(.synced), logger: quietLogger)
            let maxReported = reported.max() ?? 0
            #expect((log.lastSeq ?? 0) >= maxReported, "round \(round): acknowledged seq \(maxReported) lost; log ends at \(String(describing: log.lastSeq))")
            let all = try readAll(log)
            #expect(all.count == Int(log.lastSeq ?? 0))
            #expect(all == records(1...max(1, log.lastSeq ?? 1)).prefix(all.count).map { $0 }, "round \(round): records intact")
            lastSeq = log.lastSeq ?? 0
            log.close()
        }
        #expect(lastSeq > 0)
    }

    /// How many `COMMITTED` lines `text` holds.
    private func committed(_ text: String) -> Int {
        text.split(separator: "\n").count { $0.hasPrefix("COMMITTED ") }
    }

    /// Runs only inside the child started by ``committedRecordsSurviveKillNine()``.
    @Test(.enabled(if: getenv(directoryVariable) != nil, "runs only as the crash test's child process"))
    func crashChildEntry() throws {
        let directory = String(cString: getenv(Self.directoryVariable))
        let durability: SegmentLog.Durability = String(cString: getenv(Self.durabilityVariable)) == "relaxed" ? .relaxed : .synced
        let log = try SegmentLog(directory: directory, options: Self.childOptions(durability), logger: quietLogger)
        var seq = log.nextSeq ?? 1
        report("START \(seq)")
        var generator = SeededRandom(seed: seq)
        let parent = getppid()
        let deadline = ContinuousClock.now + .seconds(60)
        while getppid() == parent, ContinuousClock.now < deadline {
            let count = UInt64.random(in: 1...40, using: &generator)
            try log.append(records(seq...(seq + count - 1)))
            let durable = try log.commit()
            report("COMMITTED \(durable!)")
            seq += count
        }
    }

    private func report(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
}
