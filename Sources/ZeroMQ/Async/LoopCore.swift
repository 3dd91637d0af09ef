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
    private let queue: LoopCommandQueue
    private var drivers: [any LoopDriver] = []
    private var items: [zmq_pollitem_t] = []
    private let executor: UnownedTaskExecutor

    init(context: ZMQContext, queue: LoopCommandQueue, executor: UnownedTaskExecutor, logger: Logger) {
        self.context = context
        self.queue = queue
        self.executor = executor
        self.logger = logger
    }

    /// Adds a socket to the poll set.
    func add(_ driver: any LoopDriver) {
        drivers.append(driver)
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

    /// Runs until a stop is requested or the context is terminated, then closes every socket.
    func run() {
        queue.wakeup.adoptCurrentThread()
        var immediate = false
        var linger: Duration? = .zero
        turns: while true {
            let localWork = queue.wakeup.takeLocalSignal()
            guard poll(timeoutZero: immediate || localWork) else { break turns }
            immediate = false
            let polled = drivers
            var pass = 0
            repeat {
                // Pass 0 handles what zmq_poll reported; later passes run work the loop
                // queued for itself (jobs of tasks on this executor, their sends) without
                // another zmq_poll, which saves several syscalls per message round trip.
                if pass > 0 || localWork || items[0].revents != 0 {
                    if pass == 0, items[0].revents != 0 { queue.wakeup.reset() }
                    let work = queue.drain()
                    for command in work.commands { command(self) }
                    for job in work.jobs { job.runSynchronously(on: executor) }
                    if work.stop {
                        linger = work.linger
                        break turns
                    }
                }
                let now = ContinuousClock.now
                for (index, driver) in polled.enumerated() where !driver.isFinished {
                    let revents = pass == 0 ? items[index + 1].revents : 0
                    if driver.service(revents: revents, now: now) { immediate = true }
                }
                pass += 1
            } while pass < 16 && queue.wakeup.takeLocalSignal()
            drivers.removeAll { $0.isFinished }
        }
        closeAll(linger: linger)
    }

    /// Polls the wakeup fd and every driver's socket; fills `items` with the results.
    /// - Returns: `false` when the loop must stop (`ETERM` or an unexpected failure).
    private func poll(timeoutZero: Bool) -> Bool {
        let now = ContinuousClock.now
        items.removeAll(keepingCapacity: true)
        items.append(zmq_pollitem_t(socket: nil, fd: queue.wakeup.fileDescriptor, events: Int16(ZMQ_POLLIN), revents: 0))
        var timeout = timeoutZero ? 0 : -1
        for driver in drivers {
            items.append(zmq_pollitem_t(socket: driver.socket.handle, fd: 0, events: driver.interest(now: now), revents: 0))
            if !timeoutZero, let deadline = driver.deadline {
                let wait = max(0, Int((deadline - now).milliseconds) + 1)
                timeout = timeout < 0 ? wait : min(timeout, wait)
            }
        }
        while items.withUnsafeMutableBufferPointer({ zmq_poll($0.baseAddress, Int32($0.count), timeout) }) < 0 {
            let code = zmq_errno()
            if code == EINTR { continue }
            if code != ETERM {
                let error = ZMQError(errno: code, operation: "zmq_poll")
                logger.error("zmq_poll failed; stopping the I/O loop", metadata: ["flowkit.zmq.error": "\(error)"])
            }
            return false
        }
        return true
    }

    private func closeAll(linger: Duration?) {
        let reason = ZMQError(.socketClosed, message: "the I/O loop stopped", operation: "IOLoop.shutdown")
        for driver in drivers { driver.close(linger: linger, reason: reason) }
        drivers.removeAll()
        let leftover = queue.close()
        for command in leftover.commands { command(nil) }
        // Tasks that chose the loop as executor still have to finish: run what is queued
        // here (anything they enqueue from now on goes to the global executor).
        for job in leftover.jobs { job.runSynchronously(on: executor) }
    }
}
