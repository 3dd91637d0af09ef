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
    /// This is `zmq_poll` done by hand, to spend fewer syscalls per turn (they dominate a
    /// round trip): libzmq sockets signal their `ZMQ_FD` when commands arrive, edge-style,
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
        pollOwners.removeAll(keepingCapacity: true)
        interests.removeAll(keepingCapacity: true)
        pollSet.append(pollfd(fd: queue.wakeup.fileDescriptor, events: Int16(POLLIN), revents: 0))
        var anyReady = false
        var quiescentPolled = false
        var timeout = timeoutZero ? 0 : -1
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
                pollOwners.append(index)
            }
            if ready != 0 { anyReady = true }
            readiness.append(ready)
            if let deadline = driver.deadline {
                let wait = max(0, Int((deadline - now).milliseconds) + 1)
                timeout = timeout < 0 ? wait : min(timeout, wait)
            }
        }
        engineEntries.removeAll(keepingCapacity: true)
        for engine in engines {
            let start = pollSet.count
            if engine.addPollEntries(to: &pollSet) { anyReady = true }
            engineEntries.append(start..<pollSet.count)
            if let deadline = engine.deadline {
                let wait = max(0, Int((deadline - now).milliseconds) + 1)
                timeout = timeout < 0 ? wait : min(timeout, wait)
            }
        }
        if anyReady || timeoutZero {
            // Busy: do not sleep. Only sockets not yet asked need a look at their fds.
            guard quiescentPolled || !engines.isEmpty else { return queue.wakeup.isSignalled }
            timeout = 0
        }
        while pollSet.withUnsafeMutableBufferPointer({ Glibc.poll($0.baseAddress, nfds_t($0.count), Int32(timeout)) }) < 0 {
            guard errno == EINTR else { break }
        }
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

    /// `ZMQ_EVENTS` of a driver's socket; on error (e.g. `ETERM`) everything, so the
    /// driver's next call meets the error and closes the socket.
    private func currentEvents(_ driver: any LoopDriver) -> Int16 {
        (try? driver.socket.events().rawValue) ?? Int16(ZMQ_POLLIN | ZMQ_POLLOUT)
    }
}
