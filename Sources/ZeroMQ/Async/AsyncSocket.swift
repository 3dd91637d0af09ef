import Synchronization

/// A `Sendable` handle to a socket that lives on an ``IOLoop`` thread.
///
/// Any number of tasks may send through the same handle; one task at a time should
/// consume ``incoming`` (several consumers split the batches between them).
///
/// ```swift
/// let (router, endpoint) = try await loop.open(.router) { socket in
///     try socket.setOption(.routerMandatory, true)
///     return try socket.bind("tcp://127.0.0.1:*")
/// }
/// for try await batch in router.incoming {
///     for request in batch { try await router.send(Message(frames: [request[0], "ok"])) }
/// }
/// ```
public final class AsyncSocket: Sendable {
    /// The socket pattern.
    public let type: SocketType
    /// The loop that owns the socket.
    public let loop: IOLoop
    let channel: SocketChannel

    init(loop: IOLoop, channel: SocketChannel) {
        self.type = channel.type
        self.loop = loop
        self.channel = channel
    }

    deinit {
        // The last handle is gone: nobody can read or send any more, so close on the loop.
        let channel = self.channel
        loop.queue.submit { core in
            core?.driver(for: channel)?.close(linger: nil, reason: .closed("AsyncSocket released"))
        }
    }

    // MARK: Receiving

    /// Waits for received messages and returns up to `max` of them, in arrival order.
    ///
    /// Returns at once, without suspending, when messages are buffered.
    /// - Parameter max: The most messages to return.
    /// - Returns: A non-empty batch.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/socketClosed`` (or the error that closed
    ///   it) once the socket is closed and the buffer drained; `CancellationError`.
    public func receiveBatch(max: Int = .max) async throws -> [Message] {
        precondition(max > 0, "max must be positive")
        let (messages, wake) = try channel.takeAvailable(max: max)
        if wake { loop.queue.wakeup.signal() }
        if !messages.isEmpty { return messages }
        let id = channel.makeWaiterID()
        let channel = self.channel
        let wakeup = loop.queue.wakeup
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                if channel.addReceiveWaiter(id: id, max: max, continuation: continuation) { wakeup.signal() }
            }
        } onCancel: {
            channel.cancelReceiveWaiter(id: id)
        }
    }

    /// Waits for one message.
    /// - Returns: The next message.
    /// - Throws: As ``receiveBatch(max:)``.
    public func receive() async throws -> Message {
        try await receiveBatch(max: 1)[0]
    }

    // MARK: Sending

    /// Queues a message for sending, suspending while the outbound queue is full.
    ///
    /// Returns once the message is queued, not once it is on the wire. Messages from one
    /// task are sent in order. A message libzmq later refuses for good (e.g.
    /// `EHOSTUNREACH`) is dropped and reported through ``Configuration/onUndeliverable``.
    /// - Parameter message: The message to send.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/socketClosed`` if the socket is closed;
    ///   `CancellationError` if the task is cancelled while waiting (then nothing is sent).
    public func send(_ message: Message) async throws {
        if try channel.tryEnqueue(message) {
            loop.queue.wakeup.signal()
            return
        }
        try await waitToSend([message])
    }

    /// Queues several messages in order, suspending while the queue is full.
    /// - Parameter messages: The messages, sent in order.
    /// - Throws: As ``send(_:)``.
    public func send(contentsOf messages: [Message]) async throws {
        var remaining = messages[...]
        let queued = try channel.tryEnqueue(remaining)
        if queued > 0 { loop.queue.wakeup.signal() }
        remaining = remaining.dropFirst(queued)
        if !remaining.isEmpty { try await waitToSend(Array(remaining)) }
    }

    /// Queues a message if there is room, without suspending: for hot paths.
    /// - Parameter message: The message to send.
    /// - Returns: `false` if the outbound queue is full (nothing was queued).
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/socketClosed`` if the socket is closed.
    @discardableResult
    public func trySend(_ message: Message) throws -> Bool {
        guard try channel.tryEnqueue(message) else { return false }
        loop.queue.wakeup.signal()
        return true
    }

    /// Queues as many of `messages` as fit, in order, without suspending.
    /// - Parameter messages: The messages to send.
    /// - Returns: How many were queued, counted from the front.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/socketClosed`` if the socket is closed.
    @discardableResult
    public func trySend(contentsOf messages: some Collection<Message>) throws -> Int {
        let queued = try channel.tryEnqueue(messages)
        if queued > 0 { loop.queue.wakeup.signal() }
        return queued
    }

    private func waitToSend(_ messages: [Message]) async throws {
        let id = channel.makeWaiterID()
        let channel = self.channel
        let wakeup = loop.queue.wakeup
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                if channel.addSendWaiter(id: id, messages: messages, continuation: continuation) { wakeup.signal() }
            }
        } onCancel: {
            channel.cancelSendWaiter(id: id)
        }
        wakeup.signal()
    }

    // MARK: Control

    /// Runs a synchronous operation on the socket, on the I/O thread (subscribe, set an
    /// option, read the endpoint, bind another endpoint, ...).
    /// - Parameter body: The operation; it must not keep the socket.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``ZMQError/Code/socketClosed``.
    public func perform<Result: Sendable>(_ body: @escaping @Sendable (Socket) throws -> Result) async throws -> Result {
        let channel = self.channel
        return try await withCheckedThrowingContinuation { continuation in
            loop.queue.submit { core in
                guard let driver = core?.driver(for: channel) else {
                    let native = core?.setup(for: channel) != nil
                    continuation.resume(
                        throwing: native
                            ? ZMQError(.invalidArgument, message: "the socket is carried by FlowKit's ZMTP engine, which has no libzmq socket; use configure(_:)", operation: "AsyncSocket.perform")
                            : ZMQError.closed("AsyncSocket.perform")
                    )
                    return
                }
                continuation.resume(with: Swift.Result(catching: { try body(driver.socket) }))
            }
        }
    }

    /// Runs a synchronous operation on the socket, on the I/O thread, whichever engine carries it
    /// (subscribe, connect, disconnect, set an option).
    /// - Parameter body: The operation; it must not keep the socket.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, or ``ZMQError/Code/socketClosed``.
    public func configure<Result: Sendable>(_ body: @escaping @Sendable (any SocketSetup) throws -> Result) async throws -> Result {
        let channel = self.channel
        return try await withCheckedThrowingContinuation { continuation in
            loop.queue.submit { core in
                guard let setup = core?.setup(for: channel) else {
                    continuation.resume(throwing: ZMQError.closed("AsyncSocket.configure"))
                    return
                }
                continuation.resume(with: Swift.Result(catching: { try body(setup) }))
            }
        }
    }

    /// Closes the socket on the I/O thread. Pending sends fail, consumers get what is
    /// buffered and then ``ZMQError/Code/socketClosed`` (``incoming`` just ends).
    /// - Parameter linger: How long queued messages may still drain; `nil` uses
    ///   ``Configuration/closeLinger``.
    public func close(linger: Duration? = nil) async {
        let channel = self.channel
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.queue.submit { core in
                core?.close(channel, linger: linger, reason: .closed("AsyncSocket.close"))
                continuation.resume()
            }
        }
    }

    /// Whether the socket has been closed (by you, the loop or the context).
    public var isClosed: Bool {
        channel.state.withLock { $0.closedReason != nil }
    }

    /// The socket's counters.
    public var statistics: Statistics {
        let (buffered, queued) = channel.state.withLock { ($0.inbound.count, $0.queuedOutbound) }
        return Statistics(
            received: channel.receivedCount.load(ordering: .relaxed),
            sent: channel.sentCount.load(ordering: .relaxed),
            undeliverable: channel.undeliverableCount.load(ordering: .relaxed),
            bufferedIncoming: buffered,
            queuedOutgoing: queued
        )
    }
}
