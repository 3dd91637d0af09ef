extension AsyncSocket {
    /// Hands every batch this socket receives to `handler`, on the loop's thread, in the loop turn
    /// that read it: no task, continuation or job between the socket and the code that handles it.
    ///
    /// Messages received before the call come first, in order. From then on the handler is the
    /// socket's only consumer: ``receiveBatch(max:)`` and ``incoming`` throw
    /// ``ZMQError/Code/wrongState``. Like any code on the loop's thread, the handler must not block;
    /// while it runs, the loop serves no socket. It usually enters an actor that lives on the loop
    /// (see ``LoopSerialExecutor``) with `assumeIsolated`:
    ///
    /// ```swift
    /// try await subscriber.handleReceived { batch in server.assumeIsolated { $0.handle(batch) } }
    /// ```
    ///
    /// Nothing is buffered for a handled socket, so the receive buffer's bound does not apply: the
    /// loop reads no faster than the handler returns. The handler is released when the socket
    /// closes.
    /// - Parameter handler: Takes each non-empty batch, in arrival order.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/wrongState`` if the socket already has a handler
    ///   or a task waits in ``receiveBatch(max:)``; ``ZMQError/Code/socketClosed`` (or what closed
    ///   it) if it is closed; ``ZMQError/Code/loopStopped``.
    public func handleReceived(_ handler: @escaping @Sendable ([Message]) -> Void) async throws {
        let channel = self.channel
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            loop.queue.submit { core in
                guard core != nil else {
                    continuation.resume(throwing: ZMQError(.loopStopped, message: "the I/O loop has stopped", operation: "AsyncSocket.handleReceived"))
                    return
                }
                do {
                    let buffered = try channel.installReceiveHandler(handler)
                    if !buffered.isEmpty { handler(buffered) }
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
