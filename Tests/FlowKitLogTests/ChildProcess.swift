#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This test binary re-executed with extra environment variables, its stdout on a pipe.
///
/// The parent reads the child's output line by line, kills it with `SIGKILL` and reaps it.
/// `deinit` kills and reaps a child that is still running, so a failing test leaves no orphans.
final class ChildProcess {
    let pid: pid_t
    private var output: Int32
    private var pending: [UInt8] = []
    private var reaped = false

    /// Starts `/proc/self/exe` running only the Swift Testing test named `filter`.
    init(filter: String, environment extra: [String: String]) throws {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ChildError(message: "pipe failed: errno \(errno)") }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        let executable = "/proc/self/exe"
        let arguments = [executable, "--testing-library", "swift-testing", "--filter", filter]
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            environment.append(String(cString: pointer))
            entry += 1
        }
        environment += extra.map { "\($0.key)=\($0.value)" }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }

        var child: pid_t = 0
        let result = posix_spawn(&child, executable, &actions, nil, argv, envp)
        close(pipeEnds[1])
        guard result == 0 else {
            close(pipeEnds[0])
            throw ChildError(message: "posix_spawn failed: \(result)")
        }
        pid = child
        output = pipeEnds[0]
    }

    /// The next complete line of output, or nil at end of output or after `timeoutMilliseconds`.
    func readLine(timeoutMilliseconds: Int32) -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            var poller = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, timeoutMilliseconds) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }

    /// Sends `SIGKILL`.
    func kill() {
        _ = Glibc.kill(pid, SIGKILL)
    }

    /// Every remaining complete line until the child's stdout closes.
    func remainingLines() -> [String] {
        var lines: [String] = []
        while let line = readLine(timeoutMilliseconds: 10_000) { lines.append(line) }
        return lines
    }

    /// Waits for the child to exit; returns the raw wait status.
    @discardableResult
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        reaped = true
        return status
    }

    deinit {
        if !reaped {
            kill()
            wait()
        }
        close(output)
    }
}

struct ChildError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
