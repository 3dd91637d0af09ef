import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LoopCore {
    /// Waits until a socket is ready, a wakeup arrives or a driver's deadline passes, and
    /// fills ``readiness`` for this turn.
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
        let now = ContinuousClock.now
        let pollIn = Int16(ZMQ_POLLIN)
        let pollOut = Int16(ZMQ_POLLOUT)
        readiness.removeAll(keepingCapacity: true)
        pollSet.removeAll(keepingCapacity: true)
        pollTokens.removeAll(keepingCapacity: true)
        pollOwners.removeAll(keepingCapacity: true)
        interests.removeAll(keepingCapacity: true)
        pollSet.append(pollfd(fd: queue.wakeup.fileDescriptor, events: Int16(POLLIN), revents: 0))
        pollTokens.append(wakeupToken)
        var anyReady = false
        var quiescentPolled = false
        // The earliest deadline of a sleeper, a driver or an engine: the wait ends by then.
        var earliest = timers.nextDeadline
        func noteDeadline(_ deadline: ContinuousClock.Instant) { earliest = min(earliest ?? deadline, deadline) }
        for (index, driver) in drivers.enumerated() {
            let interest = driver.interest(now: now)
            interests.append(interest)
            var ready: Int16 = 0
            if interest != 0 {
                if interest & pollOut != 0 || !driver.isQuiescent {
                    ready = currentEvents(driver) & interest
                } else {
                    quiescentPolled = true
                }
                pollSet.append(pollfd(fd: driver.fileDescriptor, events: Int16(POLLIN), revents: 0))
                pollTokens.append(driver.pollToken)
                pollOwners.append(index)
            }
            if ready != 0 { anyReady = true }
            readiness.append(ready)
            if let deadline = driver.deadline { noteDeadline(deadline) }
        }
        engineEntries.removeAll(keepingCapacity: true)
        engineReady.removeAll(keepingCapacity: true)
        for engine in engines {
            let start = pollSet.count
            let ready = engine.addPollEntries(to: &pollSet, tokens: &pollTokens)
            if ready { anyReady = true }
            engineReady.append(ready)
            engineEntries.append(start..<pollSet.count)
            if let deadline = engine.deadline { noteDeadline(deadline) }
        }
        let timerSlot = deadlineTimer.map { timer in
            pollSet.append(pollfd(fd: timer.fileDescriptor, events: Int16(POLLIN), revents: 0))
            pollTokens.append(timerToken)
            return pollSet.count - 1
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
        while poll(timeout: timeout) < 0 {
            guard errno == EINTR else { break }
        }
        if let deadlineTimer, let timerSlot { deadlineTimer.clear(revents: pollSet[timerSlot].revents) }
        for (slot, index) in pollOwners.enumerated() where pollSet[slot + 1].revents != 0 {
            let interest = interests[index]
            var ready = readiness[index] | (interest & pollIn)
            if interest & pollOut != 0, ready & pollOut == 0 {
                ready |= currentEvents(drivers[index]) & pollOut
            }
            readiness[index] = ready
        }
        return pollSet[0].revents != 0 || queue.wakeup.isSignalled
    }

    /// Waits on ``pollSet`` (through ``readinessSet`` where there is one) for at most `timeout`
    /// (nil: no limit; otherwise rounded up to a millisecond, which only a system without the
    /// deadline timer uses).
    private func poll(timeout: Duration?) -> Int32 {
        let milliseconds = timeout.map { timeout -> Int32 in
            let (seconds, attoseconds) = timeout.components
            return Int32(clamping: seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        } ?? -1
        if let readinessSet { return readinessSet.wait(&pollSet, tokens: pollTokens, timeoutMilliseconds: milliseconds) }
        return pollSet.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), milliseconds) }
    }

    /// `ZMQ_EVENTS` of a driver's socket; on error (e.g. `ETERM`) everything, so the
    /// driver's next call meets the error and closes the socket.
    private func currentEvents(_ driver: any LoopDriver) -> Int16 {
        (try? driver.socket.events().rawValue) ?? Int16(ZMQ_POLLIN | ZMQ_POLLOUT)
    }
}
