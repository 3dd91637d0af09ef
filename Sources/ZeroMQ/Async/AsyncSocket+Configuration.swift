extension AsyncSocket {
    /// Bounds and hooks for one ``AsyncSocket``. The defaults suit small messages at high
    /// rates; lower the capacities for large messages to bound memory.
    public struct Configuration: Sendable {
        /// The most received messages buffered for the consumer. When the buffer is full
        /// the I/O thread stops reading the socket, so libzmq's `RCVHWM` (and then the
        /// sender's `SNDHWM`) push back on the peers: memory stays bounded.
        public var receiveBufferCapacity: Int
        /// The most messages read from this socket in one loop turn, so one busy socket
        /// cannot starve the others on the same loop.
        public var receiveBatchLimit: Int
        /// The most messages queued for sending; ``AsyncSocket/send(_:)`` suspends and
        /// ``AsyncSocket/trySend(_:)`` returns `false` while it is full.
        public var sendQueueCapacity: Int
        /// The most bytes queued for sending that the I/O thread has not taken yet (what waits
        /// when no peer can take a message: a DEALER whose peer is gone). A message that does not
        /// fit waits or is refused as for ``sendQueueCapacity``; one larger than the bound goes
        /// when the queue is empty. `Int.max` (the default): bounded by the count alone.
        public var sendQueueBytes: Int
        /// The most messages written to this socket in one loop turn.
        public var sendBatchLimit: Int
        /// The linger applied when the socket is closed without an explicit one. `nil`
        /// (the default) keeps the socket's own `LINGER` option, which is 0 unless you set
        /// it (see ``ZMQContext/Configuration/blocky``).
        public var closeLinger: Duration?
        /// Called on the I/O thread for each message the engine refused for good, such as
        /// `EHOSTUNREACH` from a ROUTER with `ROUTER_MANDATORY` whose peer has gone. The
        /// message is dropped and the queue keeps moving. Keep it short and non-blocking.
        public var onUndeliverable: (@Sendable (Message, ZMQError) -> Void)?
        /// Called on the I/O thread for each message as the engine accepts it, for tracing where a
        /// message waits: in this socket's queue, or after it. `nil` (the default) costs nothing.
        /// Keep it short and non-blocking.
        public var onSent: (@Sendable (Message) -> Void)?

        /// - Parameters:
        ///   - receiveBufferCapacity: The inbound buffer bound, in messages.
        ///   - receiveBatchLimit: Messages read per loop turn.
        ///   - sendQueueCapacity: The outbound queue bound, in messages.
        ///   - sendQueueBytes: The outbound queue bound, in bytes not yet taken by the I/O thread.
        ///   - sendBatchLimit: Messages written per loop turn.
        ///   - closeLinger: The default linger on close.
        ///   - onUndeliverable: The hook for dropped messages.
        ///   - onSent: The hook for messages the engine accepted.
        public init(
            receiveBufferCapacity: Int = 8192,
            receiveBatchLimit: Int = 512,
            sendQueueCapacity: Int = 8192,
            sendQueueBytes: Int = .max,
            sendBatchLimit: Int = 512,
            closeLinger: Duration? = nil,
            onUndeliverable: (@Sendable (Message, ZMQError) -> Void)? = nil,
            onSent: (@Sendable (Message) -> Void)? = nil
        ) {
            precondition(receiveBufferCapacity > 0 && sendQueueCapacity > 0 && sendQueueBytes > 0, "capacities must be positive")
            precondition(receiveBatchLimit > 0 && sendBatchLimit > 0, "batch limits must be positive")
            self.receiveBufferCapacity = receiveBufferCapacity
            self.receiveBatchLimit = receiveBatchLimit
            self.sendQueueCapacity = sendQueueCapacity
            self.sendQueueBytes = sendQueueBytes
            self.sendBatchLimit = sendBatchLimit
            self.closeLinger = closeLinger
            self.onUndeliverable = onUndeliverable
            self.onSent = onSent
        }
    }

    /// Counters for one socket, read without locking the I/O thread.
    public struct Statistics: Sendable, Hashable {
        /// Messages the I/O thread has received.
        public var received: Int
        /// Messages the I/O thread has handed to the engine (libzmq, or the ZMTP engine's
        /// connection buffers).
        public var sent: Int
        /// Messages dropped because the engine refused them for good (see
        /// ``Configuration/onUndeliverable``).
        public var undeliverable: Int
        /// Received messages waiting for the consumer (never above the buffer capacity).
        public var bufferedIncoming: Int
        /// Messages queued for sending and not yet handed to the engine.
        public var queuedOutgoing: Int
    }
}
