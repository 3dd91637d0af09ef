import CZeroMQ
import Logging
import Synchronization

/// Drives one ``AsyncSocket`` on the loop thread: drains the socket into the channel's
/// bounded buffer and writes the channel's outbound queue into the socket.
final class ChannelDriver: LoopDriver {
    let socket: Socket
    let channel: SocketChannel
    let fileDescriptor: Int32
    let pollToken = PollToken.next()
    private let logger: Logger
    private(set) var isFinished = false
    private(set) var isQuiescent = false

    /// Messages taken from the channel and not yet fully sent; `sendIndex` is the next one,
    /// `frameIndex` the next frame of it (after `EAGAIN` mid-message).
    private var sending: [Message] = []
    private var sendIndex = 0
    private var frameIndex = 0
    /// Set after `EAGAIN`: wait for `POLLOUT` (or `retryAt`) before sending again.
    private var sendBlocked = false
    /// `POLLOUT` turns that made no progress in a row (ROUTER reports `POLLOUT` while the
    /// head message's peer is still full); from 2 on, retry on a timer instead of spinning.
    private var fruitlessWakeups = 0
    private var retryAt: ContinuousClock.Instant?
    /// The size of the last batch read, to size the next one.
    private var lastBatchSize = 0

    init(socket: Socket, channel: SocketChannel, logger: Logger) {
        self.socket = socket
        self.channel = channel
        self.fileDescriptor = (try? socket.fileDescriptor()) ?? -1
        var logger = logger
        logger[metadataKey: "flowkit.zmq.socket"] = "\(socket.type)"
        self.logger = logger
    }

    var deadline: ContinuousClock.Instant? { retryAt }

    func interest(now: ContinuousClock.Instant) -> Int16 {
        var events: Int16 = 0
        if channel.type.canReceive, channel.inboundRoom() > 0 { events |= Int16(ZMQ_POLLIN) }
        if sendBlocked, retryAt == nil { events |= Int16(ZMQ_POLLOUT) }
        return events
    }

    func service(revents: Int16, now: ContinuousClock.Instant) -> Bool {
        var more = false
        if revents & Int16(ZMQ_POLLIN) != 0 {
            more = receive()
        }
        if sendBlocked {
            let pollOut = revents & Int16(ZMQ_POLLOUT) != 0
            if let retryAt, now >= retryAt {
                self.retryAt = nil
                sendBlocked = false
            } else if pollOut {
                sendBlocked = false
            }
        }
        if !sendBlocked, !isFinished {
            let wasBlockedBefore = revents & Int16(ZMQ_POLLOUT) != 0
            let progressed = flush()
            if sendBlocked {
                fruitlessWakeups = (wasBlockedBefore && !progressed) ? fruitlessWakeups + 1 : 0
                if fruitlessWakeups >= 2 {
                    let delay = Duration.milliseconds(1 << min(fruitlessWakeups - 2, 5))
                    retryAt = now + delay
                }
            } else {
                fruitlessWakeups = 0
                if sendIndex < sending.count || channel.hasOutbound { more = true }
            }
        }
        return more && !isFinished
    }

    /// Reads up to the batch limit (and the buffer's room) without blocking.
    /// - Returns: Whether the limit was hit (more may be ready).
    private func receive() -> Bool {
        let limit = min(channel.configuration.receiveBatchLimit, channel.inboundRoom())
        guard limit > 0 else { return false }
        // Size the array like the last batch: one allocation per batch in steady state
        // (growing it step by step made glibc consolidate its bins at every step).
        var batch: [Message] = []
        batch.reserveCapacity(min(limit, max(16, lastBatchSize)))
        do {
            try socket.receiveAvailable(into: &batch, limit: limit)
        } catch let error as ZMQError {
            isQuiescent = false
            if !batch.isEmpty { channel.deliver(batch) }
            // REQ/REP: after one message the socket must send before it may read again;
            // libzmq reports that as EFSM. It is not a failure, just the end of this turn.
            if error.code != .wrongState { fail(error) }
            return false
        } catch {
            return false
        }
        let full = batch.count == limit
        // Fewer than asked for means libzmq said EAGAIN (REQ/REP stop after one instead).
        isQuiescent = !full && channel.type != .req && channel.type != .rep
        lastBatchSize = batch.count
        if !batch.isEmpty { channel.deliver(batch) }
        return full
    }

    /// Sends queued messages until the batch limit, `EAGAIN`, or the queue is empty.
    /// - Returns: Whether at least one message left the queue.
    private func flush() -> Bool {
        guard let handle = socket.handle else { return false }
        // Work on locals: each access to a class's stored `var` costs a dynamic
        // exclusivity check, which adds up per message.
        var sending = self.sending
        var sendIndex = self.sendIndex
        var frameIndex = self.frameIndex
        self.sending = []
        defer {
            self.sending = sending
            self.sendIndex = sendIndex
            self.frameIndex = frameIndex
        }
        var budget = channel.configuration.sendBatchLimit
        let onSent = channel.configuration.onSent
        var completed = 0
        var sent = 0
        defer {
            if sent > 0 { channel.sentCount.add(sent, ordering: .relaxed) }
            if completed > 0 { channel.completeOutbound(completed) }
        }
        while budget > 0 {
            if sendIndex == sending.count {
                sending.removeAll(keepingCapacity: true)
                sendIndex = 0
                sending = channel.takeOutbound(max: budget)
                if sending.isEmpty { break }
            }
            let message = sending[sendIndex]
            isQuiescent = false  // a send may process libzmq commands and drain ZMQ_FD
            do {
                switch try socket.send(message, from: frameIndex, dontWait: true, socket: handle) {
                case .complete:
                    sent += 1
                    onSent?(message)
                case .wouldBlock(let frame):
                    frameIndex = frame
                    sendBlocked = true
                    return completed > 0
                }
            } catch let error as ZMQError {
                if error.code == .terminated || error.code == .socketClosed {
                    fail(error)
                    return completed > 0
                }
                if error.code == .wrongState, frameIndex == 0, channel.type == .req || channel.type == .rep {
                    // REQ waiting for its reply (or REP for a request): keep the message
                    // queued; POLLOUT comes once the socket may send again.
                    sendBlocked = true
                    return completed > 0
                }
                undeliverable(message, error)
            } catch {
                return completed > 0
            }
            frameIndex = 0
            sendIndex += 1
            completed += 1
            budget -= 1
        }
        return completed > 0
    }

    /// A message libzmq refused for good (`EHOSTUNREACH` for a vanished ROUTER peer, `EFSM`,
    /// ...): drop it, count it, report it, and keep serving the rest of the queue.
    private func undeliverable(_ message: Message, _ error: ZMQError) {
        channel.undeliverableCount.add(1, ordering: .relaxed)
        logger.debug(
            "dropped an undeliverable message",
            metadata: ["flowkit.zmq.error": "\(error)", "flowkit.zmq.frames": "\(message.count)"]
        )
        channel.configuration.onUndeliverable?(message, error)
    }

    private func fail(_ error: ZMQError) {
        logger.debug("socket failed; closing it", metadata: ["flowkit.zmq.error": "\(error)"])
        close(linger: .zero, reason: error)
    }

    func close(linger: Duration?, reason: ZMQError) {
        guard !isFinished else { return }
        isFinished = true
        socket.close(linger: linger ?? channel.configuration.closeLinger)
        sending.removeAll()
        channel.finish(reason: reason)
    }
}
