#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Testing

extension MultiProcessTests {
    /// The reliability suite (docs/RELIABILITY.md): chaos, fuzzing, security, slow consumers, a
    /// full disk. Serialized with every other multi-process test (``MultiProcessTests``); the time
    /// limit is generous because `flowkit chaos` and `flowkit fuzz` runs take tens of seconds and
    /// the fuzz target's build minutes.
    @Suite("Reliability", .serialized, .countingFailures, .timeLimit(.minutes(30)))
    struct ReliabilityTests {}
}

typealias ReliabilityTests = MultiProcessTests.ReliabilityTests

/// Helpers of the reliability tests.
enum Reliability {
    /// Runs `flowkit <arguments>` to completion as a child of the test (see ``ChildProcess``).
    static func flowkit(_ arguments: [String], timeout: Duration = .seconds(300)) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await run(TestCluster.findBinary(), arguments, timeout: timeout)
    }

    /// Runs `executable arguments` to completion; its output files go in a temporary directory.
    static func run(_ executable: String, _ arguments: [String], timeout: Duration) async throws -> (status: Int32, stdout: String, stderr: String) {
        let directory = try temporaryDirectory("run")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let name = (executable as NSString).lastPathComponent + "-" + ((arguments.first ?? "") as NSString).lastPathComponent
        let process = try ChildProcess.testChild(executable: executable, arguments: arguments, name: name, directory: directory)
        guard await process.waitForExit(timeout: timeout) else {
            await process.stop(grace: .seconds(2))
            throw HarnessError("`\(name) \(arguments.joined(separator: " "))` did not finish within \(timeout)\n\(process.stderrReport())")
        }
        let status = process.status ?? -1
        let exitCode = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exitCode, (try? String(contentsOfFile: process.stdoutPath, encoding: .utf8)) ?? "", process.stderrText())
    }

    static func temporaryDirectory(_ name: String) throws -> String {
        var template = Array("\(NSTemporaryDirectory())/flowkit-rel-\(name)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw HarnessError("mkdtemp failed: errno \(errno)") }
        return String(cString: made)
    }

    /// Whether this machine can run processes in network namespaces (root, `ip netns`).
    static var canUseNetworkNamespaces: Bool {
        let candidates: [String] = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"]
        guard getuid() == 0, let ip = candidates.first(where: { access($0, X_OK) == 0 }) else { return false }
        let name = "fkprobe\(getpid())"
        let add = Process()
        add.executableURL = URL(fileURLWithPath: ip)
        add.arguments = ["netns", "add", name]
        add.standardError = FileHandle.nullDevice
        guard (try? add.run()) != nil else { return false }
        add.waitUntilExit()
        let delete = Process()
        delete.executableURL = URL(fileURLWithPath: ip)
        delete.arguments = ["netns", "del", name]
        try? delete.run()
        delete.waitUntilExit()
        return add.terminationStatus == 0
    }

    /// The resident memory of `pid` in bytes (`VmRSS`), or `nil` when it is gone.
    static func residentBytes(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1_024 }
        }
        return nil
    }
}

/// The parts of `flowkit chaos --json` and `flowkit fuzz --json` the tests read.
struct ReliabilityReport: Decodable {
    struct Check: Decodable {
        var name: String
        var held: Bool
        var detail: String
    }

    struct Audit: Decodable {
        var acknowledged: Int
        var lost: Int
        var duplicated: Int
    }

    struct KindSummary: Decodable {
        var kind: String
        var count: Int
        var notConverged: Int
    }

    struct Phase: Decodable {
        struct Tally: Decodable {
            var sent: Int
            var errorReplies: [String: Int]
        }

        var target: String
        var tally: Tally
        var rejectedDelta: [String: Int]
        var mismatches: [String]
    }

    /// `flowkit fuzz`: the same submissions at a node and at the coordinator.
    struct Walls: Decodable {
        var cases: Int
        var comparedAtBothWalls: Int
        var coordinatorOnly: Int
        var admitted: Int
        var refusedByReason: [String: Int]
        var disagreements: [String]
    }

    /// `flowkit chaos`: the timers that ran through it.
    struct Timers: Decodable {
        struct Resume: Decodable {
            var fault: String?
            var secondsFromFault: Double?
        }

        var timers: Int
        var ticks: Int
        var takeovers: Int
        var resumes: [Resume]
    }

    var checks: [Check]
    var audit: Audit
    var timers: Timers?
    var effectsTakenOver: Int?
    var summary: [KindSummary]?
    var phases: [Phase]?
    var walls: Walls?

    /// The report printed as the last line of standard output.
    static func decode(_ stdout: String) throws -> ReliabilityReport {
        guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw HarnessError("no JSON report on standard output: \(stdout.suffix(2_000))")
        }
        return try JSONDecoder().decode(ReliabilityReport.self, from: Data(line.utf8))
    }

    func check(_ name: String) -> Check? { checks.first { $0.name == name } }
}
