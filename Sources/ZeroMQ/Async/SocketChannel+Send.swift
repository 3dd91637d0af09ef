import Synchronization

extension SocketChannel {
    // MARK: Producer side

    /// Queues messages from the front while they fit; never waits.
    /// - Returns: How many of `messages` were queued, from the front (0 when full).
    /// - Throws: The close reason once the socket is closed.
    func tryEnqueue(_ messages: some Collection<Message>) throws -> Int {
        try state.withLock { state in
            if let reason = state.closedReason { throw reason }
            // Suspended senders go first, so a trySend never overtakes a waiting send.
            guard state.sendWaiters.isEmpty, !messages.isEmpty else { return 0 }
            let fitting = prefixThatFits(messages, in: state)
            guard fitting > 0 else { return 0 }
            requestService()
            state.queue(messages.prefix(fitting))
            return fitting
        }
    }

    /// Queues one message if there is room; never waits.
    func tryEnqueue(_ message: Message) throws -> Bool {
        try tryEnqueue(CollectionOfOne(message)) == 1
    }

    /// Registers a sender that waits for room, unless room appeared, the channel closed or
    /// the task was cancelled in the meantime.
    /// - Returns: Whether the loop must be woken (the messages were queued at once).
    func addSendWaiter(id: UInt64, messages: [Message], continuation: SendContinuation) -> Bool {
        enum Outcome { case waiting, queued, failed(any Error) }
        let outcome: Outcome = state.withLock { state in
            if let reason = state.closedReason { return .failed(reason) }
            if state.sendWaiters.isEmpty, fits(messages, in: state) {
                state.queue(messages)
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
            for message in messages { state.outboundBytes -= message.byteCount }
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
            while let first = state.sendWaiters.first, fits(first.messages, in: state) {
                state.sendWaiters.removeFirst()
                state.queue(first.messages)
                admitted.append(first.continuation)
            }
            if !admitted.isEmpty { requestService() }
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }

    /// A batch fits if there is room for all of it, or if it is larger than the whole
    /// queue and the queue is empty (so an oversized batch cannot wait forever).
    private func fits(_ messages: [Message], in state: State) -> Bool {
        state.queuedOutbound == 0 || prefixThatFits(messages, in: state) == messages.count
    }

    /// How many of `messages`, from the front, fit beside what is queued, by count and by bytes;
    /// at least one when nothing is queued.
    private func prefixThatFits(_ messages: some Collection<Message>, in state: State) -> Int {
        let room = configuration.sendQueueCapacity - state.queuedOutbound
        guard room > 0 else { return 0 }
        guard configuration.sendQueueBytes != .max else { return min(room, messages.count) }
        var bytes = state.outboundBytes, fitting = 0
        for message in messages.prefix(room) {
            bytes += message.byteCount
            guard bytes <= configuration.sendQueueBytes || (fitting == 0 && state.outbound.isEmpty) else { break }
            fitting += 1
        }
        return fitting
    }
}
