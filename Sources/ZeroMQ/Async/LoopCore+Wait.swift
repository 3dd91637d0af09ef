import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LoopCore {
    /// Waits until a socket is ready, a wakeup arrives or a driver's deadline passes, and
    /// fills ``LoopCore/turn`` with what it found.
    ///
    /// This is `zmq_poll` done by hand (on epoll where there is one, see ``ReadinessSet``), to
    /// spend fewer syscalls per turn (they dominate a round trip): libzmq sockets signal their
    /// `ZMQ_FD` when commands arrive, edge-style,
    /// so before sleeping each socket's `ZMQ_EVENTS` is read, unless the driver is
    /// quiescent (its last receive found nothing, which drained the fd). After the sleep,
    /// a socket whose fd fired is taken as readable; the non-blocking receive that follows
    /// processes the commands itself and says `EAGAIN` if that was wrong. `POLLOUT` is
    /// always confirmed with `ZMQ_EVENTS`.
    /// - Parameter timeoutZero: Do not sleep (work is pending).
    /// - Returns: Whether the wakeup eventfd was signalled.
    func waitForReadiness(timeoutZero: Bool) -> Bool {
        // One access to the turn's state for the whole wait, rather than a checked one per field.
        prepareAndWait(&turn, timeoutZero: timeoutZero)
    }

    private func prepareAndWait(_ turn: inout LoopTurn, timeoutZero: Bool) -> Bool {
        let now = ContinuousClock.now
        let pollIn = Int16(ZMQ_POLLIN)
        let pollOut = Int16(ZMQ_POLLOUT)
        let drivers = self.drivers
        let engines = self.engines
        turn.reset()
        turn.pollSet.append(pollfd(fd: queue.wakeup.fileDescriptor, events: Int16(POLLIN), revents: 0))
        turn.tokens.append(wakeupToken)
        var anyReady = false
        var quiescentPolled = false
        // The earliest deadline of a sleeper, a driver or an engine: the wait ends by then.
        var earliest = timers.nextDeadline
        func noteDeadline(_ deadline: ContinuousClock.Instant) { earliest = min(earliest ?? deadline, deadline) }
        for (index, driver) in drivers.enumerated() {
            let interest = driver.interest(now: now)
            turn.interests.append(interest)
            var ready: Int16 = 0
            if interest != 0 {
                if interest & pollOut != 0 || !driver.isQuiescent {
                    ready = currentEvents(driver) & interest
                } else {
                    quiescentPolled = true
                }
                turn.pollSet.append(pollfd(fd: driver.fileDescriptor, events: Int16(POLLIN), revents: 0))
                turn.tokens.append(driver.pollToken)
                turn.owners.append(index)
            }
            if ready != 0 { anyReady = true }
            turn.readiness.append(ready)
            if let deadline = driver.deadline { noteDeadline(deadline) }
        }
        for engine in engines {
            let start = turn.pollSet.count
            let ready = engine.addPollEntries(to: &turn.pollSet, tokens: &turn.tokens)
            if ready { anyReady = true }
            turn.engineReady.append(ready)
            turn.engineEntries.append(start..<turn.pollSet.count)
            if let deadline = engine.deadline { noteDeadline(deadline) }
        }
        let timerSlot = deadlineTimer.map { timer in
            turn.pollSet.append(pollfd(fd: timer.fileDescriptor, events: Int16(POLLIN), revents: 0))
            turn.tokens.append(timerToken)
            return turn.pollSet.count - 1
        }
        // How long to sleep; nil: until something happens. With the deadline timer, the poll
        // itself never times out (see DeadlineTimer).
        var timeout: Duration? = timeoutZero ? .zero : nil
        if anyReady || timeoutZero {
            // Busy: do not sleep. Only sockets not yet asked need a look at their fds.
            guard quiescentPolled || !engines.isEmpty else { return queue.wakeup.isSignalled }
            timeout = .zero
        } else if let earliest {
            if let deadlineTimer {
                deadlineTimer.arm(atLatest: earliest, now: now)
            } else {
                timeout = max(.zero, earliest - now)
            }
        }
        while poll(&turn.pollSet, tokens: turn.tokens, timeout: timeout) < 0 {
            guard errno == EINTR else { break }
        }
        if let deadlineTimer, let timerSlot { deadlineTimer.clear(revents: turn.pollSet[timerSlot].revents) }
        for (slot, index) in turn.owners.enumerated() where turn.pollSet[slot + 1].revents != 0 {
            let interest = turn.interests[index]
            var ready = turn.readiness[index] | (interest & pollIn)
            if interest & pollOut != 0, ready & pollOut == 0 {
                ready |= currentEvents(drivers[index]) & pollOut
            }
            turn.readiness[index] = ready
        }
        return turn.pollSet[0].revents != 0 || queue.wakeup.isSignalled
    }

    /// Waits on `pollSet` (through ``readinessSet`` where there is one) for at most `timeout`
    /// (nil: no limit; otherwise rounded up to a millisecond, which only a system without the
    /// deadline timer uses).
    private func poll(_ pollSet: inout [pollfd], tokens: [UInt32], timeout: Duration?) -> Int32 {
        let milliseconds = timeout.map { timeout -> Int32 in
            let (seconds, attoseconds) = timeout.components
            return Int32(clamping: seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        } ?? -1
        if let readinessSet { return readinessSet.wait(&pollSet, tokens: tokens, timeoutMilliseconds: milliseconds) }
        return pollSet.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), milliseconds) }
    }

    /// `ZMQ_EVENTS` of a driver's socket; on error (e.g. `ETERM`) everything, so the
    /// driver's next call meets the error and closes the socket.
    private func currentEvents(_ driver: any LoopDriver) -> Int16 {
        (try? driver.socket.events().rawValue) ?? Int16(ZMQ_POLLIN | ZMQ_POLLOUT)
    }
}

/// One turn's wait, as a `poll()` set, and what it found: the wakeup eventfd first, then the
/// `ZMQ_FD` of each driver with interest, the engines' descriptors and the deadline timer.
struct LoopTurn {
    var pollSet: [pollfd] = []
    /// Each entry's ``PollToken``, in the order of `pollSet`.
    var tokens: [UInt32] = []
    /// For each entry of `pollSet` after the first that is a driver's, the index of its driver.
    var owners: [Int] = []
    /// Each driver's interest in this turn.
    var interests: [Int16] = []
    /// What each driver (in `drivers` order at the wait) is ready for.
    var readiness: [Int16] = []
    /// Where each engine's descriptors are in `pollSet`.
    var engineEntries: [Range<Int>] = []
    /// Whether each engine said it had work without waiting.
    var engineReady: [Bool] = []

    mutating func reset() {
        pollSet.removeAll(keepingCapacity: true)
        tokens.removeAll(keepingCapacity: true)
        owners.removeAll(keepingCapacity: true)
        interests.removeAll(keepingCapacity: true)
        readiness.removeAll(keepingCapacity: true)
        engineEntries.removeAll(keepingCapacity: true)
        engineReady.removeAll(keepingCapacity: true)
    }
}
