import Dispatch
import Foundation

/// A `flowkit` child process that `flowkit cluster` (or `bench`, `chaos`) supervises.
///
/// Children die with their parent: the parent passes its pid in `FLOWKIT_PARENT_PID`, and a child
/// that sees it watches for the parent's death and stops, within a bounded time
/// (``dieWithParentIfAsked()``), so no orphan survives even a `kill -9` of the parent.
final class ChildProcess: @unchecked Sendable {
    let name: String
    let process: Process
    /// Where the child's standard error goes.
    let logPath: String
    private let output: Pipe

    /// The environment variable that carries the parent's pid to its children.
    static let parentVariable = "FLOWKIT_PARENT_PID"

    /// Starts `flowkit <arguments>` from this very executable.
    ///
    /// - Parameters:
    ///   - namespace: A network namespace to run it in (`ip netns exec`, which `exec`s in place:
    ///     the pid is flowkit's own, and it dies with this process all the same).
    ///   - appendingToLog: Keep what `logPath` holds (a restarted process), instead of starting it
    ///     afresh.
    init(
        name: String,
        arguments: [String],
        logPath: String,
        environment: [String: String] = [:],
        namespace: String? = nil,
        appendingToLog: Bool = false
    ) throws {
        self.name = name
        self.logPath = logPath
        process = Process()
        if let namespace {
            guard let ip = Shell.find("ip") else { throw ChildProcessError("ip (iproute2) is not installed: apt-get install -y iproute2") }
            process.executableURL = URL(fileURLWithPath: ip)
            process.arguments = ["netns", "exec", namespace, ChildProcess.executablePath] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: ChildProcess.executablePath)
            process.arguments = arguments
        }
        var childEnvironment = ProcessInfo.processInfo.environment
        childEnvironment[Self.parentVariable] = "\(getpid())"
        for (key, value) in environment { childEnvironment[key] = value }
        process.environment = childEnvironment
        output = Pipe()
        process.standardOutput = output
        if !appendingToLog || !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        log.seekToEndOfFile()
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// This executable, so children run the same build (and the same flow registry).
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Waits for the child's `READY {json}` line and returns the JSON.
    ///
    /// - Throws: If the child exits or stays silent for `timeout`; the error quotes its log.
    func waitUntilReady(timeout: Duration = .seconds(30)) async throws -> [String: String] {
        let handle = output.fileHandleForReading
        // A child that stays silent too long is killed: its pipe then closes and the read ends.
        let pid = self.pid
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            kill(pid, SIGKILL)
        }
        defer { watchdog.cancel() }
        let line: String? = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var buffer = Data()
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                    if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                        continuation.resume(returning: String(decoding: buffer[..<newline], as: UTF8.self))
                        return
                    }
                }
                continuation.resume(returning: nil)
            }
        }
        guard let line, line.hasPrefix("READY ") else {
            throw ChildProcessError("\(name) did not start: \(tailOfLog())")
        }
        let json = Data(line.dropFirst("READY ".count).utf8)
        return (try? JSONDecoder().decode([String: String].self, from: json)) ?? [:]
    }

    /// Asks the child to stop (SIGTERM), waits up to `grace`, then kills it.
    func stop(grace: Duration = .seconds(5)) async {
        guard process.isRunning else { return }
        kill(pid, SIGCONT)  // a paused child could not act on SIGTERM
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now.advanced(by: grace)
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Kills the child at once (SIGKILL): fault injection.
    func kill9() {
        guard process.isRunning else { return }
        kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    /// How it ended, for a report: "node-2 (pid 123) exited: signal 9".
    var exitDescription: String {
        "\(name) (pid \(pid)) exited: \(process.terminationReason == .uncaughtSignal ? "signal" : "status") \(process.terminationStatus)"
    }

    func tailOfLog(lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// In a child started by a supervisor: die when the supervisor dies, however it dies.
    ///
    /// A thread of its own polls the parent pid every 100 ms (a pid, unlike the kernel's
    /// parent-death signal, belongs to the process, not to the thread that spawned the child).
    /// Once the parent is gone it asks for a graceful stop with SIGTERM, and exits regardless
    /// after ``orphanGrace``: a graceful stop that hangs (a peer that stopped answering, a socket
    /// that will not close) must not leave the process behind.
    static func dieWithParentIfAsked() {
        guard let text = ProcessInfo.processInfo.environment[parentVariable], let parent = Int32(text) else { return }
        // The parent may have died before this process got here.
        if getppid() != parent { exit(1) }
        Thread.detachNewThread {
            while getppid() == parent { usleep(100_000) }
            FileHandle.standardError.write(Data("flowkit: the supervising process (pid \(parent)) is gone; stopping\n".utf8))
            kill(getpid(), SIGTERM)
            usleep(useconds_t(orphanGrace.components.seconds * 1_000_000))
            FileHandle.standardError.write(Data("flowkit: still running \(orphanGrace) after its supervisor died; exiting now\n".utf8))
            _exit(1)
        }
    }

    /// How long an orphaned child may take to stop gracefully before it exits regardless.
    static let orphanGrace: Duration = .seconds(5)
}

struct ChildProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
