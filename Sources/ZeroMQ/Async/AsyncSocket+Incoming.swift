extension AsyncSocket {
    /// Received messages as an async sequence of batches.
    ///
    /// Each element is a non-empty array of messages in arrival order. Iterating a batch
    /// at a time amortises the hand-off from the I/O thread over many messages. The
    /// sequence ends when the socket is closed (by ``close(linger:)``, the loop stopping
    /// or the context terminating) and the buffer is drained.
    ///
    /// ```swift
    /// for try await batch in subscriber.incoming {
    ///     for message in batch { handle(message) }
    /// }
    /// ```
    public struct Incoming: AsyncSequence, Sendable {
        public typealias Element = [Message]

        let socket: AsyncSocket
        let maxBatch: Int

        /// Iterates the batches.
        public struct AsyncIterator: AsyncIteratorProtocol {
            let socket: AsyncSocket
            let maxBatch: Int
            var finished = false

            /// The next batch, or `nil` once the socket is closed and drained.
            public mutating func next() async throws -> [Message]? {
                guard !finished else { return nil }
                do {
                    return try await socket.receiveBatch(max: maxBatch)
                } catch let error as ZMQError where error.code == .socketClosed || error.code == .terminated {
                    finished = true
                    return nil
                }
            }
        }

        public func makeAsyncIterator() -> AsyncIterator {
            AsyncIterator(socket: socket, maxBatch: maxBatch)
        }
    }

    /// Received messages, as batches of any size.
    public var incoming: Incoming { Incoming(socket: self, maxBatch: .max) }

    /// Received messages, as batches of at most `maxBatch` messages.
    /// - Parameter maxBatch: The largest batch to hand over at once.
    /// - Returns: The sequence of batches.
    public func incoming(maxBatch: Int) -> Incoming {
        precondition(maxBatch > 0, "maxBatch must be positive")
        return Incoming(socket: self, maxBatch: maxBatch)
    }
}
