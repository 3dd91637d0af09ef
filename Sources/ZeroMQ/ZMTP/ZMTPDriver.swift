import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Serves one ``AsyncSocket`` with FlowKit's ZMTP engine, on the loop thread: it listens,
/// dials, accepts, reads and writes its TCP connections itself, and behaves toward the socket's
/// user as libzmq's socket of the same type does (ROUTER's routing ids, DEALER's round robin,
/// XPUB's subscription events and prefix filter, SUB's subscriptions, heartbeats, reconnects).
///
/// A message handed to ``AsyncSocket/send(_:)`` is written to the kernel in the same loop turn,
/// batched with whatever else that turn sends to the same peer; a message read from the kernel
/// is handed to the consumer in the turn that read it. No other thread is involved.
///
/// It is also the socket's ``SocketSetup`` during its configure closure, taking the options of
/// libzmq's it implements (and refusing the rest by name).
///
/// Its parts, each in a file: the socket options and endpoints (`ZMTPDriver+Setup.swift`), the
/// connections' lifecycle (`ZMTPDriver+Connections.swift`, `ZMTPPeer.swift`), and the pattern's
/// routing (`ZMTPRouting.swift`); this file runs the loop's turns. Its state is the ZMTP folder's
/// business: nothing outside it reaches in.
final class ZMTPDriver: SocketSetup {
    let type: SocketType
    let channel: SocketChannel
    let logger: Logger
    private(set) var isFinished = false

    // The options, named after libzmq's.
    var identity: [UInt8] = []
    var maxMessageBytes: Int?
    var heartbeatInterval: Duration?
    var heartbeatTimeout: Duration?
    var reconnectInterval: Duration = .milliseconds(100)
    var reconnectIntervalMax: Duration = .zero
    var handshakeInterval: Duration = .seconds(30)
    var sendHighWaterMark = 1_000
    var sendBufferBytes: Int32?
    var receiveBufferBytes: Int32?
    var linger: Duration = .zero

    enum Registration {
        case listener(Int32)
        case peer(Peer)
    }

    var listeners: [(fileDescriptor: Int32, endpoint: String, pollToken: UInt32)] = []
    var peers: [Peer] = []
    var dialers: [Dialer] = []
    /// Where messages go and what arrives, by the socket's pattern.
    let routing: any ZMTPRouting
    /// The descriptors registered for the current turn, in the order of the poll entries.
    var registered: [Registration] = []
    /// Set when events were left in a session for lack of room in the channel.
    var backlog = false
    /// When heartbeats, timeouts and redials are next looked at: on a coarse tick rather than
    /// every turn, which at tens of thousands of turns a second measured ~1% of the CPU.
    var nextHousekeeping: ContinuousClock.Instant?

    init(type: SocketType, channel: SocketChannel, logger: Logger) {
        self.type = type
        self.channel = channel
        self.routing = makeRouting(for: type)
        var logger = logger
        logger[metadataKey: "flowkit.zmq.socket"] = "\(type)"
        logger[metadataKey: "flowkit.zmq.engine"] = "native"
        self.logger = logger
    }

    // MARK: The loop's side

    /// When the driver wants a turn with nothing ready: to send heartbeats, enforce timeouts
    /// and redial, while it has connections or endpoints to dial.
    var deadline: ContinuousClock.Instant? {
        peers.isEmpty && dialers.isEmpty ? nil : nextHousekeeping
    }

    /// Whether heartbeats, timeouts and redials are due a look.
    func isHousekeepingDue(_ now: ContinuousClock.Instant) -> Bool {
        nextHousekeeping.map { now >= $0 } ?? true
    }

    /// Where every driver's housekeeping ticks are counted from, so the sockets of a loop keep
    /// time together: one wake-up a tick for all of them, not one per socket.
    static let tickOrigin = ContinuousClock.now

    /// The first tick of `interval` after `now`, on a grid shared by every driver.
    static func nextTick(after now: ContinuousClock.Instant, every interval: Duration) -> ContinuousClock.Instant {
        let elapsed = now - tickOrigin
        let ticks = max(0, Int64((elapsed / interval).rounded(.down))) + 1
        return tickOrigin + interval * ticks
    }

    /// How often housekeeping runs: fine enough for the shortest interval configured.
    var housekeepingTick: Duration {
        var tick = Duration.milliseconds(100)
        for interval in [heartbeatInterval, heartbeatTimeout, reconnectInterval, handshakeInterval] {
            if let interval, interval > .zero { tick = min(tick, interval / 2) }
        }
        return max(tick, .milliseconds(1))
    }

    /// Adds this turn's descriptors to `pollSet`, and their ``PollToken``s to `tokens`.
    /// - Returns: Whether the driver has work without waiting (events left, messages to send, a
    ///   closed connection to forget).
    func addPollEntries(to pollSet: inout [pollfd], tokens: inout [UInt32]) -> Bool {
        registered.removeAll(keepingCapacity: true)
        for listener in listeners {
            pollSet.append(pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0))
            tokens.append(listener.pollToken)
            registered.append(.listener(listener.fileDescriptor))
        }
        let reading = channel.inboundRoom() > 0
        var closedPeer = false
        for peer in peers {
            // A closed connection's descriptor number may already belong to another file.
            guard !peer.stream.isClosed else {
                closedPeer = true
                continue
            }
            var events: Int16 = reading ? Int16(POLLIN) : 0
            if peer.stream.session.hasOutbound { events |= Int16(POLLOUT) }
            pollSet.append(pollfd(fd: peer.stream.fileDescriptor, events: events, revents: 0))
            tokens.append(peer.stream.pollToken)
            registered.append(.peer(peer))
        }
        return closedPeer || (backlog && reading) || (channel.hasOutbound && canRoute)
    }

    /// Whether queued messages can go anywhere now (``ZMTPRouting/canRoute(among:highWaterMark:)``).
    var canRoute: Bool {
        routing.canRoute(among: peers, highWaterMark: sendHighWaterMark)
    }

    /// Handles a turn: `results` are the poll entries added by ``addPollEntries(to:)`` (their
    /// `revents` all 0 when the turn came from a wakeup).
    /// - Returns: Whether work is left that should run without waiting.
    func service(_ results: ArraySlice<pollfd>, now: ContinuousClock.Instant) -> Bool {
        guard !isFinished else { return false }
        var incoming: [Message] = []
        for (registration, result) in zip(registered, results) {
            switch registration {
            case .listener(let fd):
                if result.revents & Int16(POLLIN) != 0 { accept(from: fd, now: now) }
            case .peer(let peer):
                guard !peer.stream.isClosed else { continue }
                if result.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    do {
                        if try peer.stream.readAvailable() > 0 { peer.lastReceived = now }
                    } catch {
                        drop(peer, reason: "\(error)")
                        continue
                    }
                }
                if result.revents & Int16(POLLOUT) != 0 { write(peer) }
            }
        }
        backlog = false
        var room = channel.inboundRoom()
        // Closed peers too: a peer's last messages may have come with its goodbye.
        for peer in peers {
            room = readEvents(of: peer, room: room, into: &incoming, now: now)
        }
        if !incoming.isEmpty { channel.deliver(incoming) }
        let more = send(now: now)
        if isHousekeepingDue(now) {
            keepTime(now: now)
            nextHousekeeping = Self.nextTick(after: now, every: housekeepingTick)
        }
        peers.removeAll { peer in
            guard peer.stream.isClosed else { return false }
            forget(peer, now: now)
            return true
        }
        return more || backlog
    }

    /// Hands the peer's events to the socket's logic, as long as the channel has room.
    func readEvents(of peer: Peer, room: Int, into incoming: inout [Message], now: ContinuousClock.Instant) -> Int {
        var room = room
        while room > 0 {
            let event: ZMTPSession.Event?
            do {
                event = try peer.stream.session.nextEvent()
            } catch {
                drop(peer, reason: "\(error)")
                return room
            }
            guard let event else { break }
            switch event {
            case .ready(_, let peerIdentity):
                peer.isReady = true
                peer.handshakeDeadline = nil
                peer.dialer?.backoff = reconnectInterval
                if let interval = heartbeatInterval { peer.nextPing = now + interval }
                routing.ready(peer, identity: peerIdentity)
            case .message(let message):
                if let message = routing.arriving(message, from: peer) {
                    incoming.append(message)
                    room -= 1
                }
            case .subscribe(let prefix):
                guard !peer.subscriptions.contains(prefix) else { break }
                peer.subscriptions.append(prefix)
                if let subscribed = routing.subscribed(prefix) {
                    incoming.append(subscribed)
                    room -= 1
                }
            case .cancel(let prefix):
                guard let index = peer.subscriptions.firstIndex(of: prefix) else { break }
                peer.subscriptions.remove(at: index)
                if let cancelled = routing.unsubscribed(prefix) {
                    incoming.append(cancelled)
                    room -= 1
                }
            }
        }
        if room == 0, peer.stream.session.hasPendingInput { backlog = true }
        write(peer)
        return room
    }

    // MARK: Sending

    /// Routes queued messages to their peers' sessions and writes each touched peer once.
    /// - Returns: Whether messages are left for another turn.
    func send(now: ContinuousClock.Instant) -> Bool {
        guard type.canSend, !isFinished else { return false }
        var budget = channel.configuration.sendBatchLimit
        var completed = 0, sent = 0
        let onSent = channel.configuration.onSent
        var blocked = false
        while budget > 0, !blocked {
            let batch = takeRoutable(max: budget)
            if batch.isEmpty { break }
            for message in batch {
                switch routing.place(message, among: peers, highWaterMark: sendHighWaterMark) {
                case .placed:
                    sent += 1
                    onSent?(message)
                case .dropped(let error):
                    undeliverable(message, error)
                case .noPeer:
                    // Every peer went away during this batch (takeRoutable saw one ready): what is
                    // left of the batch is reported undeliverable, not lost silently.
                    undeliverable(message, ZMQError(errno: EHOSTUNREACH, operation: "send(\(type))"))
                    blocked = true
                }
                completed += 1
            }
            budget -= batch.count
        }
        for peer in peers where peer.stream.session.hasOutbound { write(peer) }
        if sent > 0 { channel.sentCount.add(sent, ordering: .relaxed) }
        if completed > 0 { channel.completeOutbound(completed) }
        return budget == 0 && channel.hasOutbound
    }

    /// Takes messages from the channel if they can go anywhere now (see ``canRoute``).
    func takeRoutable(max: Int) -> [Message] {
        canRoute ? channel.takeOutbound(max: max) : []
    }

    func undeliverable(_ message: Message, _ error: ZMQError?) {
        channel.undeliverableCount.add(1, ordering: .relaxed)
        if let error { channel.configuration.onUndeliverable?(message, error) }
    }

    func write(_ peer: Peer) {
        guard peer.stream.session.hasOutbound, !peer.stream.isClosed else { return }
        do {
            try peer.stream.flush()
        } catch {
            drop(peer, reason: "\(error)")
        }
    }

    /// Closes every connection and listener; what is still unwritten is tried once more.
    func close(linger: Duration?, reason: ZMQError) {
        guard !isFinished else { return }
        isFinished = true
        let linger = linger ?? channel.configuration.closeLinger ?? self.linger
        if linger > .zero {
            for peer in peers { write(peer) }
        }
        for peer in peers { peer.stream.close() }
        peers.removeAll()
        routing.reset()
        for listener in listeners { Glibc.close(listener.fileDescriptor) }
        listeners.removeAll()
        dialers.removeAll()
        channel.finish(reason: reason)
    }
}
