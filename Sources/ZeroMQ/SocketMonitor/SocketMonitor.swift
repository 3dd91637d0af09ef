import Synchronization

private let monitorCounter = Atomic<Int>(0)

/// The events of one monitored ``AsyncSocket``, as an async sequence.
///
/// The sequence ends when the monitored socket is closed (libzmq then reports
/// ``MonitorEvent/Kind/monitorStopped``), when ``stop()`` is called, or when the loop stops.
/// At most `buffering` undelivered events are kept; older ones are dropped.
public struct SocketMonitor: AsyncSequence, Sendable {
    public typealias Element = MonitorEvent

    let stream: AsyncStream<MonitorEvent>
    let socket: AsyncSocket

    /// Iterates the events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<MonitorEvent>.Iterator

        /// The next event, or `nil` once monitoring has ended.
        public mutating func next() async -> MonitorEvent? {
            await base.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    /// Stops monitoring; the sequence ends after the events already delivered.
    public func stop() async {
        _ = try? await socket.perform { try $0.stopMonitor() }
    }
}

extension AsyncSocket {
    /// Starts a libzmq socket monitor and returns its events.
    ///
    /// The monitor's PAIR socket is driven by the same I/O loop; events are decoded from
    /// libzmq's two-frame format into ``MonitorEvent`` values.
    /// - Parameters:
    ///   - events: The events to report (``MonitorEvent/Kind/monitorStopped`` is always
    ///     included, as the end-of-stream marker).
    ///   - buffering: How many undelivered events to keep (the newest are kept).
    /// - Returns: The sequence of events.
    /// - Throws: ``ZMQError`` if the socket is closed or the monitor cannot start.
    public func monitor(events: MonitorEventMask = .all, buffering: Int = 1024) async throws -> SocketMonitor {
        let (stream, continuation) = AsyncStream.makeStream(of: MonitorEvent.self, bufferingPolicy: .bufferingNewest(buffering))
        let channel = self.channel
        let endpoint = "inproc://flowkit.zmq.monitor.\(monitorCounter.add(1, ordering: .relaxed).newValue)"
        do {
            try await loop.withCore("AsyncSocket.monitor") { core in
                guard let driver = core.driver(for: channel) else { throw ZMQError.closed("AsyncSocket.monitor") }
                // MONITOR_STOPPED is always requested: it is how the stream learns to end.
                try driver.socket.startMonitor(endpoint: endpoint, events: events.union(.monitorStopped))
                let pair = try Socket(context: core.context, type: .pair)
                do {
                    try pair.connect(endpoint)
                } catch {
                    pair.close(linger: .zero)
                    try? driver.socket.stopMonitor()
                    throw error
                }
                let owner = ObjectIdentifier(pair)
                core.add(HandlerDriver(socket: pair, owner: owner, handle: { message, _ in
                    guard let event = MonitorEvent(decoding: message) else { return true }
                    continuation.yield(event)
                    return event.kind != .monitorStopped
                }, onClose: {
                    continuation.finish()
                }))
            }
        } catch {
            continuation.finish()
            throw error
        }
        return SocketMonitor(stream: stream, socket: self)
    }
}
