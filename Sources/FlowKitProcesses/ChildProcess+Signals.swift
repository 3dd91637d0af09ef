#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

extension ChildProcess {
    /// Whether the child has not been reaped yet (reaping it if it has exited).
    package var isRunning: Bool { reapIfExited() == nil }

    /// Sends `signal` to the child's process group.
    package func signal(_ signal: Int32) {
        // Never signal a reaped pid: it may belong to someone else by now.
        ChildRegistry.groups.withLock { groups in
            if groups.contains(pid) { _ = kill(-pid, signal) }
        }
    }

    /// Sends `signal` to the child itself only, not its process group: what `kill <pid>` does, so
    /// anything the child started must be handled by the child.
    package func signalProcessOnly(_ signal: Int32) {
        ChildRegistry.groups.withLock { groups in
            if groups.contains(pid) { _ = kill(pid, signal) }
        }
    }

    /// Waits until every thread of the child is stopped (after `SIGSTOP`), up to `timeout`.
    ///
    /// `kill` only makes a stop pending: the kernel wakes one thread, which then stops the others,
    /// and on a busy machine the rest may run on for milliseconds. A test that needs the child to
    /// act on nothing from now on waits for this first. Reads `/proc/<pid>/task/*/stat`.
    ///
    /// - Returns: Whether all its threads were seen stopped.
    package func waitUntilStopped(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if Self.everyThreadStopped(pid) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    /// Whether every thread of `pid` is in state `T` (stopped) or `t` (traced).
    private static func everyThreadStopped(_ pid: pid_t) -> Bool {
        let tasks = "/proc/\(pid)/task"
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: tasks), !threads.isEmpty else { return false }
        return threads.allSatisfy { thread in
            // "pid (name) S ...": the state follows the last ')', as a name may hold one.
            guard let data = FileManager.default.contents(atPath: "\(tasks)/\(thread)/stat"),
                let stat = String(data: data, encoding: .utf8), let close = stat.lastIndex(of: ")")
            else { return true }  // the thread ended meanwhile
            let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
            return state == "T" || state == "t"
        }
    }

    /// Waits until the child has exited, up to `timeout`.
    ///
    /// - Returns: Whether it exited.
    package func waitForExit(timeout: Duration) async -> Bool {
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

    /// `kill -9`, and waits until it is gone: fault injection, or the end of a stop.
    package func kill9() async {
        signal(SIGKILL)
        if !(await waitForExit(timeout: .seconds(10))) {
            // SIGKILL cannot be ignored; only an uninterruptible sleep delays it this long.
            FileHandle.standardError.write(Data("\(self) still not reaped 10 s after SIGKILL\n".utf8))
        }
    }

    /// How a stop went.
    package enum StopOutcome: Equatable, Sendable {
        /// It had exited (or been killed and reaped) before.
        case alreadyGone
        /// It exited on `SIGTERM` with this wait status.
        case exited(Int32)
        /// It ignored `SIGTERM` for the grace period and was killed.
        case killed

        /// Exited on `SIGTERM` with status 0, or was gone before.
        package var isClean: Bool { self == .alreadyGone || self == .exited(0) }
    }

    /// Graceful stop: `SIGTERM` (after `SIGCONT`, so a paused child can act on it), then
    /// `SIGKILL` after `grace`. Reaps the child.
    @discardableResult
    package func stop(grace: Duration = .seconds(5)) async -> StopOutcome {
        guard isRunning else { return .alreadyGone }
        signal(SIGCONT)
        signal(SIGTERM)
        if await waitForExit(timeout: Task.isCancelled ? .milliseconds(200) : grace) {
            return .exited(status ?? -1)
        }
        FileHandle.standardError.write(Data("\(self) ignored SIGTERM for \(grace); sending SIGKILL\n".utf8))
        await kill9()
        return .killed
    }

    /// How it ended, for a report: "node-2 (pid 123) exited: killed by signal 9".
    package var exitDescription: String {
        "\(self) \(status.map { "exited: \(Self.describe($0))" } ?? "is running")"
    }

    /// A wait status in words: "exit code 3", "killed by signal 9".
    package static func describe(_ status: Int32) -> String {
        let signal = status & 0x7F
        if signal == 0 { return "exit code \((status >> 8) & 0xFF)" }
        return "killed by signal \(signal)"
    }

    // MARK: The child's side

    /// The environment variable that carries the parent's pid to a child that stops gracefully
    /// when its parent dies (``ParentDeath/stopsGracefully``).
    package static let parentVariable = "FLOWKIT_PARENT_PID"

    /// How long an orphaned child may take to stop gracefully before it exits regardless.
    package static let orphanGrace: Duration = .seconds(5)

    /// In a child started with ``ParentDeath/stopsGracefully``: die when the parent dies, however
    /// it dies.
    ///
    /// A thread of its own polls the parent pid every 100 ms (a pid, unlike the kernel's
    /// parent-death signal, belongs to the process, not to the thread that spawned the child).
    /// Once the parent is gone it asks for a graceful stop with `SIGTERM`, and exits regardless
    /// after ``orphanGrace``: a graceful stop that hangs (a peer that stopped answering, a socket
    /// that will not close) must not leave the process behind.
    package static func dieWithParentIfAsked() {
        guard let text = ProcessInfo.processInfo.environment[parentVariable], let parent = Int32(text) else { return }
        // The parent may have died before this process got here; or the variable was inherited
        // (a command line copied with its environment): say which, rather than exit silently.
        if getppid() != parent {
            FileHandle.standardError.write(Data((
                "flowkit: \(parentVariable)=\(parent) names the process that supervises this one, but its parent is pid \(getppid()): "
                    + "the supervisor is gone, or the variable was inherited. Exiting; to run this process by hand, unset \(parentVariable).\n"
            ).utf8))
            exit(1)
        }
        Thread.detachNewThread {
            while getppid() == parent { usleep(100_000) }
            FileHandle.standardError.write(Data("flowkit: the supervising process (pid \(parent)) is gone; stopping\n".utf8))
            kill(getpid(), SIGTERM)
            usleep(useconds_t(orphanGrace.components.seconds * 1_000_000))
            FileHandle.standardError.write(Data("flowkit: still running \(orphanGrace) after its supervisor died; exiting now\n".utf8))
            _exit(1)
        }
    }
}
