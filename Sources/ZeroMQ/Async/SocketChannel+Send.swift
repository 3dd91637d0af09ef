import Synchronization

extension SocketChannel {
    // MARK: Producer side

    /// Queues messages if they all fit; never waits.
    /// - Returns: How many of `messages` were queued, from the front (0 when full).
    /// - Throws: The close reason once the socket is closed.
    func tryEnqueue(_ messages: some Collection<Message>) throws -> Int {
        try state.withLock { state in
            if let reason = state.closedReason { throw reason }
            // Suspended senders go first, so a trySend never overtakes a waiting send.
            guard state.sendWaiters.isEmpty else { return 0 }
            let room = configuration.sendQueueCapacity - state.queuedOutbound
            guard room > 0, !messages.isEmpty else { return 0 }
            requestService()
            if messages.count <= room {
                state.outbound.append(contentsOf: messages)
                return messages.count
            }
            state.outbound.append(contentsOf: messages.prefix(room))
            return room
        }
    }

    /// Queues one message if there is room; never waits.
    func tryEnqueue(_ message: Message) throws -> Bool {
        try state.withLock { state in
            if let reason = state.closedReason { throw reason }
            guard state.sendWaiters.isEmpty, state.queuedOutbound < configuration.sendQueueCapacity else { return false }
            state.outbound.append(message)
            requestService()
            return true
        }
    }

    /// Registers a sender that waits for room, unless room appeared, the channel closed or
    /// the task was cancelled in the meantime.
    /// - Returns: Whether the loop must be woken (the messages were queued at once).
    func addSendWaiter(id: UInt64, messages: [Message], continuation: SendContinuation) -> Bool {
        enum Outcome { case waiting, queued, failed(any Error) }
        let outcome: Outcome = state.withLock { state in
            if let reason = state.closedReason { return .failed(reason) }
            if state.sendWaiters.isEmpty, fits(messages.count, in: state) {
                state.outbound.append(contentsOf: messages)
                requestService()
                return .queued
            }
            if Task.isCancelled { return .failed(CancellationError()) }
            state.sendWaiters.append(SendWaiter(id: id, messages: messages, continuation: continuation))
            return .waiting
        }
        switch outcome {
        case .waiting:
            return false
        case .queued:
            continuation.resume()
            return true
        case .failed(let error):
            continuation.resume(throwing: error)
            return false
        }
    }

    /// Fails a waiting sender whose task was cancelled (its messages are not sent).
    func cancelSendWaiter(id: UInt64) {
        let waiter: SendWaiter? = state.withLock { state in
            guard let index = state.sendWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return state.sendWaiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: CancellationError())
    }

    // MARK: Loop side

    /// Moves up to `max` queued messages to the loop (they stay counted as queued).
    func takeOutbound(max: Int) -> [Message] {
        state.withLock { state in
            guard !state.outbound.isEmpty else { return [] }
            let messages = SocketChannel.take(&state.outbound, max: max)
            state.inFlight += messages.count
            return messages
        }
    }

    /// Whether messages are queued that the loop has not taken yet.
    var hasOutbound: Bool {
        state.withLock { !$0.outbound.isEmpty }
    }

    /// Releases room for `count` messages the loop has finished with (sent or dropped) and
    /// admits waiting senders in order.
    func completeOutbound(_ count: Int) {
        let admitted: [SendContinuation] = state.withLock { state in
            state.inFlight = max(0, state.inFlight - count)
            var admitted: [SendContinuation] = []
            while let first = state.sendWaiters.first, fits(first.messages.count, in: state) {
                state.sendWaiters.removeFirst()
                state.outbound.append(contentsOf: first.messages)
                admitted.append(first.continuation)
            }
            if !admitted.isEmpty { requestService() }
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }

    /// A batch fits if there is room for all of it, or if it is larger than the whole
    /// queue and the queue is empty (so an oversized batch cannot wait forever).
    private func fits(_ count: Int, in state: State) -> Bool {
        let queued = state.queuedOutbound
        return queued + count <= configuration.sendQueueCapacity || queued == 0
    }
}
