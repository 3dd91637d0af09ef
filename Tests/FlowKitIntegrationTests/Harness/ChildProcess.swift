#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// A child process of the test process, spawned so that it can never outlive the test run.
///
/// Three layers make sure no `flowkit` process is left behind:
///
/// 1. **Normal and failing tests**: ``TestCluster/run(nodes:durable:options:_:)`` stops every child on
///    every path (success, thrown error, cancellation): `SIGTERM` to the child's process group, a
///    grace period, then `SIGKILL`, and it reaps each one with `waitpid`.
/// 2. **The test process exits** without stopping them (an `exit()` after a test, a stray
///    `fatalError` caught by nobody): an `atexit` handler sends `SIGKILL` to every process group
///    still registered.
/// 3. **The test process dies** (`SIGKILL`, a crash, Ctrl-C on `swift test`): each child runs with
///    `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it when its parent goes. A child cannot be
///    given that flag through `posix_spawn` directly, so it is started through util-linux's
///    `setpriv --pdeathsig KILL -- flowkit …`, which sets the flag and `exec`s `flowkit` (same
///    pid, the flag survives `exec`). The kernel ties the parent-death signal to the *thread* that
///    spawned the child, and Swift's cooperative pool threads may exit when idle; so every child is
///    spawned from ``SpawnThread``, one thread that lives as long as the process.
///
/// Each child is also the leader of its own session and process group (`POSIX_SPAWN_SETSID`): a
/// Ctrl-C in the terminal does not reach it halfway through a test, and a signal to `-pid` reaches
/// anything it might fork.
final class ChildProcess: Sendable, CustomStringConvertible {
    let pid: pid_t
    /// A short name for messages: `coordinator#1`, `node-2#3`.
    let name: String
    let stdoutPath: String
    let stderrPath: String
    private let exitStatus = Mutex<Int32?>(nil)

    private init(pid: pid_t, name: String, stdoutPath: String, stderrPath: String) {
        self.pid = pid
        self.name = name
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    var description: String { "\(name) (pid \(pid))" }

    /// Starts `executable` with `arguments`, its stdout and stderr in files under `directory`.
    ///
    /// The child's environment is the test process's without `FLOWKIT_*` variables, so a config
    /// file or log level set for the developer's shell does not change what the tests run.
    static func spawn(executable: String, arguments: [String], name: String, directory: String) async throws -> ChildProcess {
        ChildRegistry.installExitHandler()
        let stdoutPath = "\(directory)/\(name).stdout"
        let stderrPath = "\(directory)/\(name).stderr"
        let setpriv = "/usr/bin/setpriv"
        let argv: [String]
        if access(setpriv, X_OK) == 0 {
            argv = [setpriv, "--pdeathsig", "KILL", "--", executable] + arguments
        } else {
            // Without setpriv only layers 1 and 2 apply.
            argv = [executable] + arguments
        }
        let environment = ProcessInfo.processInfo.environment
            .filter { !$0.key.hasPrefix("FLOWKIT_") }
            .map { "\($0.key)=\($0.value)" }
        let pid = try await SpawnThread.shared.run {
            try posixSpawn(argv: argv, environment: environment, stdoutPath: stdoutPath, stderrPath: stderrPath)
        }
        // The test that started it looks for it in its leftover check (it leads its own group).
        SpawnedGroups.current?.add(pid)
        return ChildProcess(pid: pid, name: name, stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    private static func posixSpawn(
        argv: [String],
        environment: [String],
        stdoutPath: String,
        stderrPath: String
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

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
            throw HarnessError("posix_spawn \(argv.joined(separator: " ")) failed: \(String(cString: strerror(result)))")
        }
        return pid
    }

    // MARK: Output

    /// Waits for the line starting with `prefix` on the child's stdout (its READY line).
    ///
    /// - Throws: ``HarnessError`` with the child's stderr tail if the child exits first or the
    ///   line does not come within `timeout`.
    func waitForLine(prefix: String, timeout: Duration) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let text = try? String(contentsOfFile: stdoutPath, encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix(prefix) })
            {
                return String(line)
            }
            if let status = reapIfExited() {
                throw HarnessError("\(self) exited (\(Self.describe(status))) before printing \(prefix)\n\(stderrTail())")
            }
            if ContinuousClock.now >= deadline || Task.isCancelled {
                throw HarnessError("\(self) printed no \(prefix)line within \(timeout)\n\(stderrTail())")
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The last `lines` lines of the child's stderr, framed for a test log.
    func stderrTail(lines: Int = 40) -> String {
        let text = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "(no stderr file)"
        let tail = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
        return "----- \(self): last \(lines) lines of stderr (\(stderrPath)) -----\n\(tail)\n----- end of \(name) -----"
    }

    /// The full stderr text.
    func stderrText() -> String {
        (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
    }

    // MARK: Signals and reaping

    /// Whether the child has not been reaped yet (reaping it if it has exited).
    var isRunning: Bool { reapIfExited() == nil }

    /// The wait status once the child has exited and was reaped.
    var status: Int32? { exitStatus.withLock { $0 } }

    /// Sends `signal` to the child's process group.
    func signal(_ signal: Int32) {
        // Never signal a reaped pid: it may belong to someone else by now.
        ChildRegistry.groups.withLock { groups in
            if groups.contains(pid) { _ = kill(-pid, signal) }
        }
    }

    /// Reaps the child if it has exited.
    ///
    /// - Returns: Its wait status, or `nil` while it runs.
    @discardableResult
    func reapIfExited() -> Int32? {
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

    /// Waits until the child has exited, up to `timeout`.
    ///
    /// - Returns: Whether it exited.
    func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while reapIfExited() == nil {
            if ContinuousClock.now >= deadline { return false }
            if Task.isCancelled {
                usleep(10_000)
            } else {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return true
    }

    /// `kill -9`, and waits until it is gone.
    func kill9() async {
        signal(SIGKILL)
        if !(await waitForExit(timeout: .seconds(10))) {
            // SIGKILL cannot be ignored; only an uninterruptible sleep delays it this long.
            print("harness: \(self) still not reaped 10 s after SIGKILL")
        }
    }

    /// How a stop went.
    enum StopOutcome: Equatable {
        /// It had exited (or been killed and reaped) before.
        case alreadyGone
        /// It exited on `SIGTERM` with this wait status.
        case exited(Int32)
        /// It ignored `SIGTERM` for the grace period and was killed.
        case killed

        /// Exited on `SIGTERM` with status 0, or was gone before.
        var isClean: Bool { self == .alreadyGone || self == .exited(0) }
    }

    /// Graceful stop: `SIGTERM`, then `SIGKILL` after `grace`. Reaps the child.
    @discardableResult
    func stop(grace: Duration = .seconds(5)) async -> StopOutcome {
        guard isRunning else { return .alreadyGone }
        signal(SIGTERM)
        if await waitForExit(timeout: Task.isCancelled ? .milliseconds(200) : grace) {
            return .exited(status ?? -1)
        }
        print("harness: \(self) ignored SIGTERM for \(grace); sending SIGKILL")
        await kill9()
        return .killed
    }

    static func describe(_ status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exit code \((status >> 8) & 0xFF)" }
        return "killed by signal \(signal)"
    }
}

/// The process groups of children not yet reaped, for the exit handler.
enum ChildRegistry {
    static let groups = Mutex<Set<pid_t>>([])
    private static let installed = Mutex(false)

    static func installExitHandler() {
        let first = installed.withLock { installed in
            defer { installed = true }
            return !installed
        }
        guard first else { return }
        atexit {
            ChildRegistry.groups.withLock { groups in
                for group in groups { _ = kill(-group, SIGKILL) }
            }
        }
    }

    /// The processes, from `/proc`, in any of `groups`: what a test whose children led those
    /// groups leaves behind. Processes of other tests (other groups) are not its business, so
    /// suites may run side by side.
    static func processes(inGroups groups: Set<pid_t>) -> [String] {
        guard !groups.isEmpty, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [String] = []
        for entry in entries where entry.allSatisfy(\.isNumber) {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { continue }
            let command = stat[stat.index(after: open)..<close]
            // After the command: state, parent, process group.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, let group = Int32(fields[2]), groups.contains(group) else { continue }
            found.append("\(entry) \(command) state \(fields[0])")
        }
        return found
    }
}

/// The process groups the children of one test lead: bound for the test's scope with
/// `SpawnedGroups.$current.withValue(…)`, filled by
/// ``ChildProcess/spawn(executable:arguments:name:directory:)``.
final class SpawnedGroups: Sendable {
    @TaskLocal static var current: SpawnedGroups?

    private let groups = Mutex<Set<pid_t>>([])

    func add(_ group: pid_t) { groups.withLock { _ = $0.insert(group) } }

    /// What is still running, or not yet reaped, of what was started in this scope.
    var leftovers: [String] { ChildRegistry.processes(inGroups: groups.withLock { $0 }) }
}

/// Runs closures on one thread that lives as long as the process (see ``ChildProcess``).
final class SpawnThread: @unchecked Sendable {
    static let shared = SpawnThread()
    // Guards `jobs`.
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []

    private init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job()
            }
        }
        thread.name = "flowkit-it-spawner"
        thread.start()
    }

    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            condition.lock()
            jobs.append { continuation.resume(with: Result { try body() }) }
            condition.signal()
            condition.unlock()
        }
    }
}

/// A harness failure with a message that says what happened.
struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
