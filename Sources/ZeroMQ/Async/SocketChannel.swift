import Synchronization

/// The state an ``AsyncSocket`` shares with its driver on the loop thread: the bounded
/// inbound buffer, the bounded outbound queue, and the tasks waiting on either.
///
/// All mutable state is behind one `Mutex`; continuations are always resumed after the
/// lock is released.
final class SocketChannel: Sendable {
    // Unsafe continuations on the per-batch paths (a checked one allocates per wait). Each
    // is resumed exactly once: it lives in one waiter list, and is removed from it under
    // the lock before it is resumed; when it is not stored it is resumed on the spot.
    typealias ReceiveContinuation = UnsafeContinuation<[Message], any Error>
    typealias SendContinuation = UnsafeContinuation<Void, any Error>
    /// Takes each received batch on the loop thread (``AsyncSocket/handleReceived(_:)``).
    typealias ReceiveHandler = @Sendable ([Message]) -> Void

    struct ReceiveWaiter {
        let id: UInt64
        let max: Int
        let continuation: ReceiveContinuation
    }

    struct SendWaiter {
        let id: UInt64
        let messages: [Message]
        let continuation: SendContinuation
    }

    struct State {
        var inbound = BatchQueue()
        var receiveWaiters: [ReceiveWaiter] = []
        /// Set once the consumer takes messages on the loop thread: nothing is buffered then.
        var receiveHandler: ReceiveHandler?
        /// Set by the loop when the buffer was full and it stopped polling `POLLIN`.
        var readPaused = false
        var outbound: [Message] = []
        /// The bytes of `outbound`.
        var outboundBytes = 0
        /// Messages the loop took from `outbound` and has not finished sending.
        var inFlight = 0
        var sendWaiters: [SendWaiter] = []
        var closedReason: ZMQError?
        var nextWaiterID: UInt64 = 0

        var queuedOutbound: Int { outbound.count + inFlight }

        mutating func queue(_ messages: some Collection<Message>) {
            outbound.append(contentsOf: messages)
            for message in messages { outboundBytes += message.byteCount }
        }
    }

    let type: SocketType
    let configuration: AsyncSocket.Configuration
    let state = Mutex(State())
    let receivedCount = Atomic<Int>(0)
    let sentCount = Atomic<Int>(0)
    let undeliverableCount = Atomic<Int>(0)
    /// Set when the loop has work for this channel that no descriptor will report: messages
    /// queued to send, or room made for reading again. The ZMTP engine serves a socket in a
    /// loop turn only when its descriptors are ready or this is set, not every socket every turn.
    private let serviceRequested = Atomic<Bool>(false)

    init(type: SocketType, configuration: AsyncSocket.Configuration) {
        self.type = type
        self.configuration = configuration
    }

    /// Asks the loop to serve this channel in its next pass. Set before the loop is signalled,
    /// so a loop that sees the signal sees the request.
    func requestService() {
        serviceRequested.store(true, ordering: .releasing)
    }

    /// Takes the request made by ``requestService()``.
    func takeServiceRequest() -> Bool {
        serviceRequested.load(ordering: .relaxed) && serviceRequested.exchange(false, ordering: .acquiringAndReleasing)
    }

    // MARK: Loop side

    /// How many messages the loop may read now; `0` pauses reading (and records that the
    /// consumer must wake the loop once it has made room).
    func inboundRoom() -> Int {
        state.withLock { state in
            let room = configuration.receiveBufferCapacity - state.inbound.count
            if room <= 0 { state.readPaused = true }
            return max(0, room)
        }
    }

    /// Appends received messages, handing them straight to waiting consumers, or, on a socket
    /// with a receive handler, hands them to it here, on the loop thread.
    func deliver(_ batch: [Message]) {
        let count = batch.count
        enum Delivery { case handler(ReceiveHandler), waiters([(ReceiveContinuation, [Message])]) }
        let delivery: Delivery = state.withLock { state in
            if let handler = state.receiveHandler { return .handler(handler) }
            state.inbound.append(batch)
            var resumptions: [(ReceiveContinuation, [Message])] = []
            while !state.inbound.isEmpty, !state.receiveWaiters.isEmpty {
                let waiter = state.receiveWaiters.removeFirst()
                resumptions.append((waiter.continuation, state.inbound.take(max: waiter.max)))
            }
            return .waiters(resumptions)
        }
        receivedCount.add(count, ordering: .relaxed)
        switch delivery {
        case .handler(let handler):
            handler(batch)
        case .waiters(let resumptions):
            for (continuation, messages) in resumptions { continuation.resume(returning: messages) }
        }
    }

    /// Makes `handler` the consumer, on the loop thread: from now on ``deliver(_:)`` hands it each
    /// batch. Returns what was buffered before, for the handler to take first; reading resumes if
    /// the full buffer had paused it.
    /// - Throws: ``ZMQError`` when the channel is closed, already has a handler, or a task waits
    ///   in ``AsyncSocket/receiveBatch(max:)``: one consumer at a time.
    func installReceiveHandler(_ handler: @escaping ReceiveHandler) throws -> [Message] {
        try state.withLock { state in
            if let reason = state.closedReason { throw reason }
            guard state.receiveHandler == nil, state.receiveWaiters.isEmpty else {
                throw ZMQError(.wrongState, message: "the socket already has a consumer", operation: "AsyncSocket.handleReceived")
            }
            state.receiveHandler = handler
            var buffered: [Message] = []
            while !state.inbound.isEmpty { buffered += state.inbound.take(max: .max) }
            if state.readPaused {
                state.readPaused = false
                requestService()
            }
            return buffered
        }
    }

    /// Closes the channel: pending senders fail, receivers get what is buffered, then the error.
    func finish(reason: ZMQError) {
        let (receivers, senders): ([ReceiveWaiter], [SendWaiter]) = state.withLock { state in
            guard state.closedReason == nil else { return ([], []) }
            state.closedReason = reason
            state.receiveHandler = nil
            state.outbound.removeAll()
            state.outboundBytes = 0
            state.inFlight = 0
            let receivers = state.receiveWaiters
            let senders = state.sendWaiters
            state.receiveWaiters.removeAll()
            state.sendWaiters.removeAll()
            return (receivers, senders)
        }
        for receiver in receivers { receiver.continuation.resume(throwing: reason) }
        for sender in senders { sender.continuation.resume(throwing: reason) }
    }

    // MARK: Consumer side

    /// Takes up to `max` buffered messages without waiting.
    /// - Returns: The messages (possibly empty) and whether the loop must be woken to
    ///   resume reading.
    func takeAvailable(max: Int) throws -> (messages: [Message], wake: Bool) {
        try state.withLock { state in
            if state.receiveHandler != nil { throw Self.handledError }
            if state.inbound.isEmpty {
                if let reason = state.closedReason { throw reason }
                return ([], false)
            }
            let messages = state.inbound.take(max: max)
            return (messages, resumeReadingIfRoom(&state))
        }
    }

    /// Registers a waiting consumer, unless messages arrived, the channel closed or the
    /// task was cancelled in the meantime.
    func addReceiveWaiter(id: UInt64, max: Int, continuation: ReceiveContinuation) -> Bool {
        enum Outcome { case waiting, ready([Message], wake: Bool), failed(any Error) }
        let outcome: Outcome = state.withLock { state in
            if !state.inbound.isEmpty {
                let messages = state.inbound.take(max: max)
                return .ready(messages, wake: resumeReadingIfRoom(&state))
            }
            if let reason = state.closedReason { return .failed(reason) }
            if state.receiveHandler != nil { return .failed(Self.handledError) }
            if Task.isCancelled { return .failed(CancellationError()) }
            state.receiveWaiters.append(ReceiveWaiter(id: id, max: max, continuation: continuation))
            return .waiting
        }
        switch outcome {
        case .waiting:
            return false
        case .ready(let messages, let wake):
            continuation.resume(returning: messages)
            return wake
        case .failed(let error):
            continuation.resume(throwing: error)
            return false
        }
    }

    /// Fails a waiting consumer whose task was cancelled.
    func cancelReceiveWaiter(id: UInt64) {
        let waiter: ReceiveWaiter? = state.withLock { state in
            guard let index = state.receiveWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.receiveWaiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    static let handledError = ZMQError(
        .wrongState, message: "the socket's messages go to its receive handler", operation: "AsyncSocket.receiveBatch"
    )

    func makeWaiterID() -> UInt64 {
        state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
    }

    /// After a consumer took messages: if the loop paused reading and the buffer has
    /// drained to half, clear the pause and report that the loop must be woken.
    private func resumeReadingIfRoom(_ state: inout State) -> Bool {
        guard state.readPaused, state.inbound.count <= configuration.receiveBufferCapacity / 2 else { return false }
        state.readPaused = false
        requestService()
        return true
    }

    static func take(_ buffer: inout [Message], max: Int) -> [Message] {
        if max >= buffer.count {
            let all = buffer
            buffer = []
            return all
        }
        let head = Array(buffer[..<max])
        buffer.removeFirst(max)
        return head
    }
}
