#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Synchronization

/// One finished run of a command.
struct CommandResult: Sendable, CustomStringConvertible {
    var arguments: [String]
    /// The wait status.
    var status: Int32
    var stdout: String
    var stderr: String

    /// The exit code, or `nil` when a signal ended it.
    var exitCode: Int32? { status & 0x7F == 0 ? (status >> 8) & 0xFF : nil }

    var description: String {
        "`\(arguments.joined(separator: " "))` ended with \(ChildProcess.describe(status))\n--- stdout\n\(stdout)--- stderr\n\(stderr)---"
    }
}

/// Runs short-lived commands (`flowkit emit`, `flowkit status`, a script) as children of the test
/// process, with the guarantees of ``ChildProcess``: their output in files under `directory`.
struct CommandRunner: Sendable {
    /// Where the commands' output files go.
    let directory: String
    private static let counter = Atomic<Int>(0)

    /// Runs `executable arguments…` to completion.
    ///
    /// - Parameters:
    ///   - workingDirectory: The command's current directory (through `env -C`); the test's otherwise.
    ///   - timeout: After this the command is stopped (SIGTERM, then SIGKILL after `grace`) and
    ///     the run throws.
    func run(
        _ executable: String,
        _ arguments: [String],
        workingDirectory: String? = nil,
        timeout: Duration = .seconds(30),
        grace: Duration = .seconds(1)
    ) async throws -> CommandResult {
        let number = Self.counter.add(1, ordering: .relaxed).newValue
        let base = (executable as NSString).lastPathComponent
        let name = "cmd-\(number)-\(base)-\(arguments.first.map { ($0 as NSString).lastPathComponent } ?? "")"
        var argv = arguments
        var program = executable
        if let workingDirectory {
            argv = ["-C", workingDirectory, executable] + arguments
            program = "/usr/bin/env"
        }
        let process = try ChildProcess.testChild(executable: program, arguments: argv, name: name, directory: directory)
        guard await process.waitForExit(timeout: timeout) else {
            await process.stop(grace: grace)
            throw HarnessError("`\(base) \(arguments.joined(separator: " "))` did not finish within \(timeout)\n\(process.stderrReport())")
        }
        return CommandResult(
            arguments: [base] + arguments,
            status: process.status ?? -1,
            stdout: (try? String(contentsOfFile: process.stdoutPath, encoding: .utf8)) ?? "",
            stderr: process.stderrText()
        )
    }
}

extension ChildProcess {
    /// Waits until the child's stdout contains `text`.
    ///
    /// - Throws: ``HarnessError`` if the child exits first or `timeout` passes.
    func waitForOutput(containing text: String, timeout: Duration) async throws {
        let deadline = ContinuousClock.now + timeout
        while !((try? String(contentsOfFile: stdoutPath, encoding: .utf8))?.contains(text) ?? false) {
            if let status = reapIfExited() {
                throw HarnessError("\(self) exited (\(Self.describe(status))) before printing \(text)\n\(stderrReport())")
            }
            if ContinuousClock.now >= deadline { throw HarnessError("\(self) printed no \(text) within \(timeout)\n\(stderrReport())") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Its standard output so far.
    var stdoutText: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// Whether the child's stderr has a line containing `text` yet.
    func stderrContains(_ text: String) -> Bool { stderrText().contains(text) }
}

/// Processes on this machine, from `/proc`.
enum ProcessTable {
    /// The live processes whose command name is `command`.
    static func named(_ command: String) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.filter { $0.allSatisfy(\.isNumber) }.compactMap { entry -> pid_t? in
            guard let (name, state, _) = stat(of: pid_t(entry)!), name == command, state != "Z" else { return nil }
            return pid_t(entry)
        }
    }

    /// The pids whose parent is `parent`, with their command names.
    static func children(of parent: pid_t) -> [(pid: pid_t, command: String)] {
        var found: [(pid_t, String)] = []
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        for entry in entries where entry.allSatisfy(\.isNumber) {
            guard let (command, state, ppid) = stat(of: pid_t(entry)!), ppid == parent, state != "Z" else { continue }
            found.append((pid_t(entry)!, command))
        }
        return found
    }

    /// Command name, state letter and parent pid of `pid`, or `nil` when there is no such process.
    static func stat(of pid: pid_t) -> (command: String, state: String, parent: pid_t)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 2, let parent = pid_t(fields[1]) else { return nil }
        return (String(text[text.index(after: open)..<close]), String(fields[0]), parent)
    }

    /// Whether `pid` no longer runs a `flowkit` program: gone, a zombie, or reused by another one.
    static func isGone(_ pid: pid_t) -> Bool {
        guard let (command, state, _) = stat(of: pid) else { return true }
        return !command.hasPrefix("flowkit") || state == "Z" || state == "X"
    }
}
