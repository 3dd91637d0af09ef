import Logging

/// A dedicated I/O thread that owns ZeroMQ sockets and drives them from one readiness wait.
///
/// libzmq sockets must stay on one thread, and their calls block; Swift's cooperative
/// pool must never block. The loop bridges the two: it runs on a thread of its own
/// (never a cooperative one), sleeps in one wait (epoll on Linux, `poll` elsewhere) over its
/// sockets' descriptors plus an `eventfd` for wakeups (no busy polling), drains readable
/// sockets in batches into bounded
/// buffers, and writes queued messages, waiting for `POLLOUT` on `EAGAIN`.
///
/// Sockets are created and configured on the loop's thread, through a closure, and come
/// back as `Sendable` ``AsyncSocket`` handles:
///
/// ```swift
/// let loop = try IOLoop(context: context, logger: logger)
/// let (sub, _) = try await loop.open(.sub) { socket in
///     try socket.subscribe("prices.")
///     try socket.connect(endpoint)
/// }
/// ```
///
/// The loop is also a `TaskExecutor`. A task that prefers it runs on the I/O thread
/// between polls, so a message is handed to it with no thread hop at all; that is the
/// lowest-latency path, for short non-blocking handlers:
///
/// ```swift
/// await withTaskExecutorPreference(loop) {
///     for try await batch in router.incoming { for m in batch { try router.trySend(reply(m)) } }
/// }
/// ```
///
/// Code running there must never block (no blocking syscalls, no long computations): it
/// holds up every socket of the loop. Without a preference, tasks run on the cooperative
/// pool as usual.
///
/// Stop it with ``shutdown(linger:)``; terminating the context stops it too.
public final class IOLoop: TaskExecutor, Sendable {
    /// The context the loop's sockets belong to.
    public let context: ZMQContext
    /// The loop's name (also its thread's name).
    public let name: String
    let queue: LoopCommandQueue
    /// The loop's thread as a serial executor, for an actor that lives on it (see
    /// ``LoopSerialExecutor``).
    public let serialExecutor: LoopSerialExecutor
    private let logger: Logger
    private let stopped = OneShot<Void>()

    /// Starts a loop thread.
    /// - Parameters:
    ///   - context: The context to create sockets in.
    ///   - name: A name for the thread and the logs.
    ///   - logger: Where the loop logs; metadata keys start with `flowkit.zmq.`.
    /// - Throws: ``ZMQError`` if the wakeup fd cannot be made or the context is terminating.
    public init(context: ZMQContext, name: String = "zmq-io", logger: Logger) throws {
        self.context = context
        self.name = name
        var loopLogger = logger
        loopLogger[metadataKey: "flowkit.zmq.loop"] = "\(name)"
        self.logger = loopLogger
        let logger = loopLogger
        let queue = try LoopCommandQueue()
        self.queue = queue
        let serialExecutor = LoopSerialExecutor(queue: queue)
        self.serialExecutor = serialExecutor
        let stopped = self.stopped
        let registered = context.addShutdownHook(ObjectIdentifier(queue)) { [queue] in
            queue.requestStop(linger: .zero)
        }
        guard registered else {
            throw ZMQError(.terminated, message: "the context is terminating", operation: "IOLoop.init")
        }
        let executor = UnownedTaskExecutor(ordinary: self)
        IOThread.start(name: name) { [context] in
            let core = LoopCore(
                context: context, queue: queue, executor: executor, serialExecutor: serialExecutor.asUnownedSerialExecutor(), logger: logger
            )
            core.run()
            context.removeShutdownHook(ObjectIdentifier(queue))
            logger.debug("I/O loop stopped")
            stopped.fulfill(())
        }
    }

    deinit {
        queue.requestStop(linger: .zero)
    }

    /// Runs a job of a task that prefers this loop as its executor, on the I/O thread; once the
    /// loop has stopped, on the global concurrent executor.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !queue.enqueue(LoopJob(job: job, isolated: false)) { globalConcurrentExecutor.enqueue(job) }
    }

    /// Creates a socket on the loop thread, runs `configure` on it there, and returns the
    /// handle with whatever `configure` returned (typically the bound endpoint).
    ///
    /// If `configure` throws, the socket is closed and the error rethrown.
    /// - Parameters:
    ///   - type: The socket pattern.
    ///   - configuration: Buffer bounds and hooks for the handle.
    ///   - configure: Sets options and binds/connects, on the loop thread.
    /// - Returns: The handle and `configure`'s result.
    /// - Throws: ``ZMQError`` from socket creation or `configure`; ``ZMQError/Code/loopStopped``.
    public func open<Result: Sendable>(
        _ type: SocketType,
        configuration: AsyncSocket.Configuration = AsyncSocket.Configuration(),
        _ configure: @escaping @Sendable (Socket) throws -> Result
    ) async throws -> (AsyncSocket, Result) {
        try await withCheckedThrowingContinuation { continuation in
            queue.submit { [self] core in
                guard let core else {
                    continuation.resume(throwing: ZMQError(.loopStopped, message: "the I/O loop has stopped", operation: "IOLoop.open(\(type))"))
                    return
                }
                do {
                    let socket = try Socket(context: context, type: type)
                    let result: Result
                    do {
                        result = try configure(socket)
                    } catch {
                        socket.close(linger: .zero)
                        throw error
                    }
                    let channel = SocketChannel(type: type, configuration: configuration)
                    core.add(ChannelDriver(socket: socket, channel: channel, logger: logger))
                    continuation.resume(returning: (AsyncSocket(loop: self, channel: channel), result))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Creates a socket carried by `engine` on the loop thread, runs `configure` on it there, and
    /// returns the handle with whatever `configure` returned.
    ///
    /// With ``SocketEngine/native`` the socket is FlowKit's own ZMTP engine: TCP endpoints and the
    /// NULL mechanism only, and the options ``SocketSetup`` names; it talks to libzmq peers (and
    /// pyzmq, and any ZMTP 3 implementation) like a libzmq socket of the same type.
    /// - Parameters:
    ///   - type: The socket pattern.
    ///   - engine: Which implementation carries the socket.
    ///   - configuration: Buffer bounds and hooks for the handle.
    ///   - configure: Sets options and binds/connects, on the loop thread.
    /// - Returns: The handle and `configure`'s result.
    /// - Throws: ``ZMQError`` from socket creation or `configure`; ``ZMQError/Code/loopStopped``.
    public func open<Result: Sendable>(
        _ type: SocketType,
        engine: SocketEngine,
        configuration: AsyncSocket.Configuration = AsyncSocket.Configuration(),
        _ configure: @escaping @Sendable (any SocketSetup) throws -> Result
    ) async throws -> (AsyncSocket, Result) {
        if engine == .libzmq {
            return try await open(type, configuration: configuration) { (socket: Socket) in try configure(socket) }
        }
        guard type != .req, type != .rep else {
            throw ZMQError(
                .invalidArgument,
                message: "FlowKit's ZMTP engine does not implement REQ and REP (their envelopes and lockstep); use DEALER and ROUTER, or the libzmq engine",
                operation: "IOLoop.open(\(type))"
            )
        }
        return try await withCheckedThrowingContinuation { continuation in
            queue.submit { [self] core in
                guard let core else {
                    continuation.resume(throwing: ZMQError(.loopStopped, message: "the I/O loop has stopped", operation: "IOLoop.open(\(type))"))
                    return
                }
                let channel = SocketChannel(type: type, configuration: configuration)
                let driver = ZMTPDriver(type: type, channel: channel, logger: logger)
                do {
                    let result = try configure(driver)
                    core.add(driver)
                    continuation.resume(returning: (AsyncSocket(loop: self, channel: channel), result))
                } catch {
                    driver.close(linger: .zero, reason: .closed("IOLoop.open"))
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Creates a socket on the loop thread and configures it (see the generic overload).
    /// - Returns: The handle.
    public func open(
        _ type: SocketType,
        configuration: AsyncSocket.Configuration = AsyncSocket.Configuration(),
        _ configure: @escaping @Sendable (Socket) throws -> Void = { _ in }
    ) async throws -> AsyncSocket {
        let (socket, _) = try await open(type, configuration: configuration, configure) as (AsyncSocket, Void)
        return socket
    }

    /// Suspends the calling task until `deadline`, timed by the loop's own wait, to the
    /// microsecond.
    ///
    /// A task that prefers the loop as its executor resumes on the loop thread in the turn the
    /// deadline falls in, together with whatever the sockets brought: no other thread wakes
    /// (`Task.sleep` wakes one of Swift's pool and hands the task back). That makes it the way to
    /// pace work that sends on the loop's sockets, such as an open-loop load generator.
    ///
    /// With a `tolerance`, the sleep ends in the first turn of the loop at or after `deadline`,
    /// whatever woke the loop, and the loop wakes for it by `deadline + tolerance` at the latest:
    /// work paced this way rides the turns the loop takes anyway (a load generator sends what is
    /// due whenever replies come in, as a C client on `ppoll` would), and wakes the loop on its own
    /// at most once per tolerance.
    /// - Parameters:
    ///   - deadline: When to resume at the earliest; a past deadline resumes in the loop's next
    ///     turn.
    ///   - tolerance: How much later than `deadline` the sleep may end, if the loop has no other
    ///     reason to turn.
    /// - Throws: `CancellationError` if the task is cancelled; ``ZMQError/Code/loopStopped`` if the
    ///   loop stops first.
    public func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration = .zero) async throws {
        try Task.checkCancellation()
        let sleep = LoopTimers.Sleep(deadline: deadline, tolerance: tolerance)
        let queue = self.queue
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                queue.submit { core in
                    guard let core else {
                        continuation.resume(throwing: ZMQError(.loopStopped, message: "the I/O loop has stopped", operation: "IOLoop.sleep"))
                        return
                    }
                    core.timers.add(sleep, continuation: continuation)
                }
            }
        } onCancel: {
            // Marked first: a cancel that overtakes the sleep in the loop's queue finds it marked.
            sleep.markCancelled()
            queue.submit { core in core?.timers.cancel(sleep) }
        }
    }

    /// Closes every socket of the loop with `linger` and ends its thread; waits for both.
    ///
    /// Tasks running on the loop as their executor move to the global executor.
    /// - Parameter linger: How long unsent messages may drain; `nil` uses each handle's
    ///   ``AsyncSocket/Configuration/closeLinger``.
    public func shutdown(linger: Duration? = .zero) async {
        queue.requestStop(linger: linger)
        await stopped.wait()
    }

    /// Runs `body` on the loop thread with the loop's core (for ZAP and monitors).
    func withCore<Result: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (LoopCore) throws -> Result
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            queue.submit { core in
                guard let core else {
                    continuation.resume(throwing: ZMQError(.loopStopped, message: "the I/O loop has stopped", operation: operation))
                    return
                }
                continuation.resume(with: Swift.Result(catching: { try body(core) }))
            }
        }
    }
}
