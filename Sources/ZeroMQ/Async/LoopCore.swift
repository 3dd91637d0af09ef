import CZeroMQ
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The part of an ``IOLoop`` that lives on its thread: the drivers and the poll loop.
///
/// Nothing here is touched from another thread; other threads talk to it only through
/// the ``LoopCommandQueue``.
final class LoopCore {
    let context: ZMQContext
    let logger: Logger
    let queue: LoopCommandQueue
    private(set) var drivers: [any LoopDriver] = []
    /// The sockets carried by FlowKit's ZMTP engine; their descriptors follow the drivers' in the
    /// turn's poll set.
    private(set) var engines: [ZMTPDriver] = []
    /// This turn's wait and what it found, filled by ``waitForReadiness(timeoutZero:)``.
    var turn = LoopTurn()
    /// Tasks sleeping until a deadline (``IOLoop/sleep(until:)``).
    var timers = LoopTimers()
    /// Wakes the poll at the earliest deadline (a sleeper's, a driver's retry, an engine's
    /// housekeeping), so the poll carries no timeout; `nil` where the system has no timer
    /// descriptor, and the poll times out instead.
    let deadlineTimer = DeadlineTimer()
    /// Where the loop waits: epoll, keeping the poll set registered between turns; `nil` where the
    /// system has no epoll, and the loop calls `poll`.
    let readinessSet = ReadinessSet()
    /// The tokens of the loop's own descriptors: its wakeup and its deadline timer.
    let wakeupToken = PollToken.next()
    let timerToken = PollToken.next()
    private let executor: UnownedTaskExecutor
    private let serialExecutor: UnownedSerialExecutor

    init(context: ZMQContext, queue: LoopCommandQueue, executor: UnownedTaskExecutor, serialExecutor: UnownedSerialExecutor, logger: Logger) {
        self.context = context
        self.queue = queue
        self.executor = executor
        self.serialExecutor = serialExecutor
        self.logger = logger
    }

    /// Adds a socket to the poll set.
    func add(_ driver: any LoopDriver) {
        drivers.append(driver)
    }

    /// Adds a socket of the ZMTP engine to the poll set.
    func add(_ engine: ZMTPDriver) {
        engines.append(engine)
    }

    /// The socket serving `channel`, as its configure closure saw it, if it is still open.
    func setup(for channel: SocketChannel) -> (any SocketSetup)? {
        if let driver = driver(for: channel) { return driver.socket }
        return engines.first { $0.channel === channel && !$0.isFinished }
    }

    /// Closes the socket serving `channel`, whichever engine carries it.
    func close(_ channel: SocketChannel, linger: Duration?, reason: ZMQError) {
        driver(for: channel)?.close(linger: linger, reason: reason)
        engines.first { $0.channel === channel }?.close(linger: linger, reason: reason)
    }

    /// The driver serving `channel`, if it is still open.
    func driver(for channel: SocketChannel) -> ChannelDriver? {
        for driver in drivers {
            if let driver = driver as? ChannelDriver, driver.channel === channel, !driver.isFinished {
                return driver
            }
        }
        return nil
    }

    /// Closes the handler socket registered by `owner`, if it is still open.
    func closeHandler(owner: ObjectIdentifier) {
        for driver in drivers {
            if let driver = driver as? HandlerDriver, driver.owner == owner {
                driver.close(linger: .zero, reason: .closed("handler stopped"))
            }
        }
    }

    /// Runs until a stop is requested (``IOLoop/shutdown(linger:)``, or the context's
    /// shutdown hook), then closes every socket.
    func run() {
        queue.wakeup.adoptCurrentThread()
        var immediate = false
        var linger: Duration?
        turns: while true {
            let localWork = queue.wakeup.takeLocalSignal()
            let wakeupSignalled = waitForReadiness(timeoutZero: immediate || localWork)
            immediate = false
            // Sleepers woken here queue their jobs on this loop: the passes below run them.
            timers.fire(now: .now)
            let polled = drivers
            let polledEngines = engines
            // What the wait found, read many times below: one copy rather than a checked access each.
            let waited = turn
            var pass = 0
            repeat {
                // Pass 0 handles what the wait reported; later passes run work the loop
                // queued for itself (jobs of tasks on this executor, their sends) without
                // waiting again, which saves several syscalls per message round trip.
                var commandsRan = false
                if pass > 0 || localWork || wakeupSignalled {
                    if pass == 0, wakeupSignalled { queue.wakeup.reset() }
                    let work = queue.drain()
                    commandsRan = !work.commands.isEmpty
                    for command in work.commands { command(self) }
                    for job in work.jobs { run(job) }
                    if work.stop {
                        linger = work.linger
                        break turns
                    }
                }
                let now = ContinuousClock.now
                for (index, driver) in polled.enumerated() where !driver.isFinished {
                    let revents = pass == 0 ? waited.readiness[index] : 0
                    if driver.service(revents: revents, now: now) { immediate = true }
                }
                for (index, engine) in polledEngines.enumerated() where !engine.isFinished {
                    let fromWait = pass == 0 && index < waited.engineEntries.count
                    let results = fromWait ? waited.pollSet[waited.engineEntries[index]] : []
                    // An engine is served when something is there for it: a descriptor ready,
                    // work it reported before the wait, a request from its channel (messages to
                    // send, room to read), its housekeeping due, or a command (which may have
                    // changed anything). Serving every socket in every pass cost a node a fifth
                    // of its loop thread.
                    let due = engine.channel.takeServiceRequest() || commandsRan
                        || (fromWait && (waited.engineReady[index] || results.contains { $0.revents != 0 } || engine.isHousekeepingDue(now)))
                    guard due else { continue }
                    if engine.service(results, now: now) { immediate = true }
                }
                pass += 1
            } while pass < 16 && queue.wakeup.takeLocalSignal()
            drivers.removeAll { $0.isFinished }
            engines.removeAll { $0.isFinished }
        }
        closeAll(linger: linger)
    }

    private func closeAll(linger: Duration?) {
        let reason = ZMQError(.socketClosed, message: "the I/O loop stopped", operation: "IOLoop.shutdown")
        for driver in drivers { driver.close(linger: linger, reason: reason) }
        drivers.removeAll()
        for engine in engines { engine.close(linger: linger, reason: reason) }
        engines.removeAll()
        timers.failAll(ZMQError(.loopStopped, message: "the I/O loop stopped", operation: "IOLoop.sleep"))
        let leftover = queue.close()
        for command in leftover.commands { command(nil) }
        // Tasks that chose the loop as executor, and actors on it, still have to finish: run what
        // is queued here (what they enqueue from now on goes to the global executor, or, an
        // actor's, to the serial executor's fallback queue).
        for job in leftover.jobs { run(job) }
    }

    /// Runs a queued job: a task's on the loop as its task executor, an actor's isolated to the
    /// loop's serial executor as well (so the actor's next call from it needs no hop).
    private func run(_ job: LoopJob) {
        if job.isolated {
            job.job.runSynchronously(isolatedTo: serialExecutor, taskExecutor: executor)
        } else {
            job.job.runSynchronously(on: executor)
        }
    }
}
