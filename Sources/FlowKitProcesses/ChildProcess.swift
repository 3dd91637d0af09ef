#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A child process that can never outlive the process that started it: the one launcher that
/// `flowkit cluster`, the tools and the tests share.
///
/// Three layers make sure no child is left behind:
///
/// 1. **Normal and failing paths**: ``stop(grace:)`` sends `SIGTERM` to the child's process group,
///    waits, then sends `SIGKILL`, and reaps the child with `waitpid`.
/// 2. **The parent exits** without stopping it (an `exit()`, a `fatalError` nobody caught): an
///    `atexit` handler sends `SIGKILL` to every process group still registered (``ChildRegistry``).
/// 3. **The parent dies** (`SIGKILL`, a crash): see ``ParentDeath``. Either the kernel kills the
///    child (`PR_SET_PDEATHSIG`, set by util-linux's `setpriv` before it `exec`s the program: same
///    pid, and the flag survives `exec`), or the child, told its parent's pid in
///    `FLOWKIT_PARENT_PID`, notices and stops gracefully (``dieWithParentIfAsked()``). The kernel
///    ties the parent-death signal to the *thread* that spawned the child, and Swift's cooperative
///    threads may exit when idle, so every child is spawned from ``SpawnThread``, one thread that
///    lives as long as the process.
///
/// Each child leads its own session and process group (`POSIX_SPAWN_SETSID`): a Ctrl-C in the
/// terminal does not reach it behind its supervisor's back, and a signal to `-pid` reaches
/// anything it forks. Its stdout and stderr go to files, never to a pipe nobody drains.
package final class ChildProcess: Sendable, CustomStringConvertible {
    package let pid: pid_t
    /// A short name for messages: `coordinator`, `node-2#3`.
    package let name: String
    package let stdoutPath: String
    package let stderrPath: String
    private let exitStatus = Mutex<Int32?>(nil)
    /// When it was spawned.
    package let startedAt = ContinuousClock.now

    private init(pid: pid_t, name: String, stdoutPath: String, stderrPath: String) {
        self.pid = pid
        self.name = name
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    package var description: String { "\(name) (pid \(pid))" }

    /// What happens to the child when its parent dies without stopping it.
    package enum ParentDeath: Sendable {
        /// The kernel kills it at once (`SIGKILL`): test children, which hold nothing worth a
        /// graceful stop.
        case killed
        /// It stops gracefully (`SIGTERM` to itself), then exits regardless after
        /// ``ChildProcess/orphanGrace``: `flowkit` children that call ``dieWithParentIfAsked()``.
        case stopsGracefully
    }

    /// Starts `executable` with `arguments`.
    ///
    /// - Parameters:
    ///   - executable: The program; ``thisExecutable`` runs the same build (and flow registry).
    ///   - name: For messages, and the default file names `directory/name.stdout` and `.stderr`.
    ///   - directory: Where its output files go.
    ///   - stderrPath: Its stderr file instead of `directory/name.stderr`.
    ///   - appendingStderr: Keep what the stderr file holds (a restarted process's log).
    ///   - environment: Variables to set on top of this process's environment.
    ///   - inheritingFlowKitVariables: Whether this process's `FLOWKIT_*` variables pass to the
    ///     child. Tests leave them out, so a developer's shell does not change what they run.
    ///   - namespace: A network namespace to run it in (`ip netns exec`, which `exec`s in place:
    ///     the pid is the program's own).
    ///   - whenParentDies: See ``ParentDeath``.
    package static func spawn(
        executable: String = ChildProcess.thisExecutable,
        arguments: [String],
        name: String,
        directory: String,
        stderrPath: String? = nil,
        appendingStderr: Bool = false,
        environment: [String: String] = [:],
        inheritingFlowKitVariables: Bool = true,
        namespace: String? = nil,
        whenParentDies: ParentDeath = .killed
    ) throws -> ChildProcess {
        ChildRegistry.installExitHandler()
        let stdoutPath = "\(directory)/\(name).stdout"
        let stderrPath = stderrPath ?? "\(directory)/\(name).stderr"
        var argv = [executable] + arguments
        if let namespace {
            guard let ip = findProgram("ip") else {
                throw ChildProcessError("ip (iproute2) is not installed: apt-get install -y iproute2")
            }
            argv = [ip, "netns", "exec", namespace] + argv
        }
        var variables = ProcessInfo.processInfo.environment
        if !inheritingFlowKitVariables { variables = variables.filter { !$0.key.hasPrefix("FLOWKIT_") } }
        switch whenParentDies {
        case .killed:
            let setpriv = "/usr/bin/setpriv"
            // Without setpriv only layers 1 and 2 apply.
            if access(setpriv, X_OK) == 0 { argv = [setpriv, "--pdeathsig", "KILL", "--"] + argv }
        case .stopsGracefully:
            variables[parentVariable] = "\(getpid())"
        }
        variables.merge(environment) { $1 }
        let command = argv
        let environment = variables.map { "\($0.key)=\($0.value)" }
        let pid = try SpawnThread.shared.run {
            try posixSpawn(
                argv: command,
                environment: environment,
                stdoutPath: stdoutPath,
                stderr: (stderrPath, appendingStderr)
            )
        }
        // The test or command that started it looks for it in its leftover check.
        SpawnedGroups.current?.add(pid)
        return ChildProcess(pid: pid, name: name, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    /// This executable, so children run the same build (and the same flow registry).
    package static var thisExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The path of `name` on `PATH` (or in `/usr/sbin`, `/sbin`), if it is installed.
    package static func findProgram(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin"
        return (path.split(separator: ":").map { "\($0)/\(name)" } + ["/usr/sbin/\(name)", "/sbin/\(name)"])
            .first { access($0, X_OK) == 0 }
    }

    private static func posixSpawn(
        argv: [String],
        environment: [String],
        stdoutPath: String,
        stderr: (path: String, appending: Bool)
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr.path, O_WRONLY | O_CREAT | (stderr.appending ? O_APPEND : O_TRUNC), 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A new session (and process group); default dispositions and an empty mask for the
        // signals the child's graceful shutdown relies on, whatever this thread had.
        let setsid: Int32 = 0x80  // POSIX_SPAWN_SETSID, glibc ≥ 2.26
        posix_spawnattr_setflags(&attributes, Int16(setsid | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer { (cArguments + cEnvironment).forEach { free($0) } }
        var pid: pid_t = 0
        // Registered under the lock, so the exit handler never misses a child that exists.
        let result = ChildRegistry.groups.withLock { groups in
            let result = posix_spawn(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
            if result == 0 { groups.insert(pid) }
            return result
        }
        guard result == 0 else {
            throw ChildProcessError("cannot start \(argv.joined(separator: " ")): \(String(cString: strerror(result)))")
        }
        return pid
    }

    /// The wait status once the child has exited and was reaped.
    package var status: Int32? { exitStatus.withLock { $0 } }

    /// Reaps the child if it has exited.
    ///
    /// - Returns: Its wait status, or `nil` while it runs.
    @discardableResult
    package func reapIfExited() -> Int32? {
        if let status = exitStatus.withLock({ $0 }) { return status }
        // waitpid and the registry update happen under one lock, so `signal` and the exit
        // handler never see a pid that was reaped (and might be reused).
        return ChildRegistry.groups.withLock { groups -> Int32? in
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            guard result == pid || (result < 0 && errno == ECHILD) else { return nil }
            groups.remove(pid)
            exitStatus.withLock { $0 = status }
            return status
        }
    }

    // MARK: Output

    /// Waits for the line starting with `prefix` on the child's stdout.
    ///
    /// - Throws: ``ChildProcessError`` with the child's stderr tail if the child exits first or
    ///   the line does not come within `timeout`.
    package func waitForLine(prefix: String, timeout: Duration) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let line = stdoutText().split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
                return String(line)
            }
            if let status = reapIfExited() {
                throw ChildProcessError("\(self) exited (\(Self.describe(status))) before printing \(prefix)\n\(stderrReport())")
            }
            if ContinuousClock.now >= deadline || Task.isCancelled {
                throw ChildProcessError("\(self) printed no \(prefix)line within \(timeout)\n\(stderrReport())")
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits for the child's `READY {json}` line and returns its fields.
    package func waitUntilReady(timeout: Duration = .seconds(30)) async throws -> [String: String] {
        let line = try await waitForLine(prefix: "READY ", timeout: timeout)
        guard let fields = try? JSONDecoder().decode([String: String].self, from: Data(line.dropFirst("READY ".count).utf8)) else {
            throw ChildProcessError("\(self) printed a READY line that is not a JSON object of strings: \(line)")
        }
        return fields
    }

    /// Everything the child has written to stdout so far.
    package func stdoutText() -> String {
        (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? ""
    }

    /// Everything the child has written to stderr so far.
    package func stderrText() -> String {
        (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
    }

    /// The last `lines` lines of the child's stderr.
    package func stderrTail(lines: Int = 15) -> String {
        stderrText().split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// The last `lines` lines of the child's stderr, framed for a report among other output.
    package func stderrReport(lines: Int = 40) -> String {
        "----- \(self): last \(lines) lines of stderr (\(stderrPath)) -----\n\(stderrTail(lines: lines))\n----- end of \(name) -----"
    }
}

/// A child process that could not be started or did not behave, with a message that says how.
package struct ChildProcessError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
