import Synchronization

/// Work handed to an ``IOLoop`` thread. The argument is the loop's thread-confined core,
/// or `nil` when the loop has stopped and the command must fail instead of running.
typealias LoopCommand = @Sendable (LoopCore?) -> Void

/// The thread-safe side of an I/O loop: the command queue and the wakeup.
final class LoopCommandQueue: Sendable {
    private struct State {
        var commands: [LoopCommand] = []
        var jobs: [LoopJob] = []
        var stopping = false
        var stopLinger: Duration?
    }

    let wakeup: Wakeup
    private let state = Mutex(State())

    init() throws {
        wakeup = try Wakeup()
    }

    /// Queues `command` for the loop thread, or fails it at once if the loop has stopped.
    func submit(_ command: @escaping LoopCommand) {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.commands.append(command)
            return true
        }
        if accepted {
            wakeup.signal()
        } else {
            command(nil)
        }
    }

    /// Queues a job to run on the loop thread: a task's (the loop as a `TaskExecutor`), or an
    /// actor's (the loop's ``LoopSerialExecutor``).
    /// - Returns: `false` once the loop has stopped; the caller runs the job elsewhere.
    func enqueue(_ job: LoopJob) -> Bool {
        let accepted = state.withLock { state in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if accepted { wakeup.signal() }
        return accepted
    }

    /// Asks the loop to close every socket with `linger` and exit. Idempotent; the first
    /// linger given wins.
    func requestStop(linger: Duration?) {
        let changed = state.withLock { state in
            guard !state.stopping else { return false }
            state.stopping = true
            state.stopLinger = linger
            return true
        }
        if changed { wakeup.signal() }
    }

    /// Takes the queued commands and jobs, and whether a stop was requested (and its linger).
    func drain() -> (commands: [LoopCommand], jobs: [LoopJob], stop: Bool, linger: Duration?) {
        state.withLock { state in
            let commands = state.commands
            let jobs = state.jobs
            state.commands = []
            state.jobs = []
            return (commands, jobs, state.stopping, state.stopLinger)
        }
    }

    /// Marks the queue stopped and returns the commands and jobs still queued; later
    /// commands fail at once and later jobs go to the global executor.
    func close() -> (commands: [LoopCommand], jobs: [LoopJob]) {
        state.withLock { state in
            state.stopping = true
            defer {
                state.commands = []
                state.jobs = []
            }
            return (state.commands, state.jobs)
        }
    }
}

/// A job queued on a loop, and whether it runs isolated to the loop's ``LoopSerialExecutor`` (an
/// actor's job) or only on the loop as a task executor (a task's job).
struct LoopJob: Sendable {
    let job: UnownedJob
    let isolated: Bool
}
