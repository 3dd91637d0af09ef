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
final class ZMTPDriver: SocketSetup {
    let type: SocketType
    let channel: SocketChannel
    private let logger: Logger
    private(set) var isFinished = false

    // The options, named after libzmq's.
    private var identity: [UInt8] = []
    private var maxMessageBytes: Int?
    private var heartbeatInterval: Duration?
    private var heartbeatTimeout: Duration?
    private var reconnectInterval: Duration = .milliseconds(100)
    private var reconnectIntervalMax: Duration = .zero
    private var handshakeInterval: Duration = .seconds(30)
    private var sendHighWaterMark = 1_000
    private var sendBufferBytes: Int32?
    private var receiveBufferBytes: Int32?
    private var routerMandatory = false
    private var linger: Duration = .zero

    /// One TCP connection and its protocol state.
    final class Peer {
        let stream: ZMTPStream
        /// The endpoint this side dialed, or `nil` for a connection it accepted.
        let dialer: Dialer?
        var routingID: [UInt8] = []
        var isReady = false
        /// What this peer subscribed to (XPUB and PUB).
        var subscriptions: [[UInt8]] = []
        var lastReceived: ContinuousClock.Instant
        var nextPing: ContinuousClock.Instant?
        var handshakeDeadline: ContinuousClock.Instant?

        init(stream: ZMTPStream, dialer: Dialer?, now: ContinuousClock.Instant) {
            self.stream = stream
            self.dialer = dialer
            self.lastReceived = now
        }
    }

    /// An endpoint given to ``connect(_:)``: dialed again after each disconnect.
    final class Dialer {
        let endpoint: String
        let host: String
        let port: UInt16
        var peer: Peer?
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration

        init(endpoint: String, host: String, port: UInt16, backoff: Duration) {
            self.endpoint = endpoint
            self.host = host
            self.port = port
            self.backoff = backoff
        }
    }

    private enum Registration {
        case listener(Int32)
        case peer(Peer)
    }

    private var listeners: [(fileDescriptor: Int32, endpoint: String, pollToken: UInt32)] = []
    private var peers: [Peer] = []
    private var dialers: [Dialer] = []
    /// ROUTER: the peer behind each routing id.
    private var routes: [[UInt8]: Peer] = [:]
    private var nextRoutingID = UInt32.random(in: 0...UInt32.max)
    private var roundRobin = 0
    /// XPUB: how many peers subscribe to each prefix (an event is delivered at 0 → 1 and 1 → 0).
    private var topics: [[UInt8]: Int] = [:]
    /// SUB: the prefixes asked for, sent to every peer.
    private var subscriptions: [[UInt8]] = []
    /// The descriptors registered for the current turn, in the order of the poll entries.
    private var registered: [Registration] = []
    /// Set when events were left in a session for lack of room in the channel.
    private var backlog = false
    /// When heartbeats, timeouts and redials are next looked at: on a coarse tick rather than
    /// every turn, which at tens of thousands of turns a second measured ~1% of the CPU.
    private var nextHousekeeping: ContinuousClock.Instant?

    init(type: SocketType, channel: SocketChannel, logger: Logger) {
        self.type = type
        self.channel = channel
        var logger = logger
        logger[metadataKey: "flowkit.zmq.socket"] = "\(type)"
        logger[metadataKey: "flowkit.zmq.engine"] = "native"
        self.logger = logger
    }

    // MARK: SocketSetup

    func setOption<Value>(_ option: SocketOption<Value>, _ value: Value) throws {
        func invalid() -> ZMQError {
            ZMQError(.invalidArgument, message: "\(value) is not a valid value for \(option.name)", operation: "setOption(\(option.name))")
        }
        switch option.rawValue {
        case SocketOption<[UInt8]>.routingID.rawValue:
            guard let bytes = value as? [UInt8], bytes.count <= 255, bytes.first != 0 else { throw invalid() }
            identity = bytes
        case SocketOption<Int64>.maxMessageSize.rawValue:
            guard let limit = value as? Int64 else { throw invalid() }
            maxMessageBytes = limit < 0 ? nil : Int(limit)
        case SocketOption<Duration>.linger.rawValue:
            guard let duration = value as? Duration else { throw invalid() }
            linger = duration
        case SocketOption<Duration>.heartbeatInterval.rawValue:
            guard let duration = value as? Duration else { throw invalid() }
            heartbeatInterval = duration > .zero ? duration : nil
        case SocketOption<Duration>.heartbeatTimeout.rawValue:
            guard let duration = value as? Duration else { throw invalid() }
            heartbeatTimeout = duration > .zero ? duration : nil
        case SocketOption<Duration>.reconnectInterval.rawValue:
            guard let duration = value as? Duration, duration >= .zero else { throw invalid() }
            reconnectInterval = duration
        case SocketOption<Duration>.reconnectIntervalMax.rawValue:
            guard let duration = value as? Duration, duration >= .zero else { throw invalid() }
            reconnectIntervalMax = duration
        case SocketOption<Duration>.handshakeInterval.rawValue:
            guard let duration = value as? Duration, duration >= .zero else { throw invalid() }
            handshakeInterval = duration
        case SocketOption<Int32>.sendHighWaterMark.rawValue:
            guard let count = value as? Int32, count >= 0 else { throw invalid() }
            sendHighWaterMark = count == 0 ? .max : Int(count)
        case SocketOption<Int32>.receiveHighWaterMark.rawValue:
            // Reading stops when the channel's buffer is full; there is no second queue to bound.
            guard value is Int32 else { throw invalid() }
        case SocketOption<Int32>.sendBufferBytes.rawValue:
            guard let bytes = value as? Int32 else { throw invalid() }
            sendBufferBytes = bytes > 0 ? bytes : nil
        case SocketOption<Int32>.receiveBufferBytes.rawValue:
            guard let bytes = value as? Int32 else { throw invalid() }
            receiveBufferBytes = bytes > 0 ? bytes : nil
        case SocketOption<Bool>.routerMandatory.rawValue:
            guard let flag = value as? Bool, type == .router else { throw invalid() }
            routerMandatory = flag
        case SocketOption<[UInt8]>.subscribe.rawValue:
            guard let prefix = value as? [UInt8], type == .sub || type == .xsub else { throw invalid() }
            try subscribe(bytes: prefix)
        case SocketOption<[UInt8]>.unsubscribe.rawValue:
            guard let prefix = value as? [UInt8], type == .sub || type == .xsub else { throw invalid() }
            try unsubscribe(bytes: prefix)
        default:
            throw ZMQError(
                .invalidArgument,
                message: "FlowKit's ZMTP engine does not implement \(option.name); open the socket with the libzmq engine",
                operation: "setOption(\(option.name))"
            )
        }
    }

    @discardableResult
    func bind(_ endpoint: String) throws -> String {
        let (host, port) = try Self.parse(endpoint, operation: "bind", wildcardPort: true)
        let (fd, bound) = try TCPSocket.listen(host: host, port: port)
        let resolved = "tcp://\(host == "*" ? "0.0.0.0" : host):\(bound)"
        listeners.append((fd, resolved, PollToken.next()))
        return resolved
    }

    func connect(_ endpoint: String) throws {
        let (host, port) = try Self.parse(endpoint, operation: "connect", wildcardPort: false)
        let dialer = Dialer(endpoint: endpoint, host: host, port: port, backoff: reconnectInterval)
        dialers.append(dialer)
        dial(dialer, now: .now)
    }

    func disconnect(_ endpoint: String) throws {
        guard let index = dialers.firstIndex(where: { $0.endpoint == endpoint }) else {
            throw ZMQError(errno: ENOENT, operation: "disconnect(\(endpoint))")
        }
        let dialer = dialers.remove(at: index)
        if let peer = dialer.peer { drop(peer, reason: "disconnected by the application") }
    }

    func subscribe(bytes prefix: [UInt8]) throws {
        guard type == .sub || type == .xsub else {
            throw ZMQError(.invalidArgument, message: "only SUB and XSUB sockets subscribe", operation: "subscribe")
        }
        subscriptions.append(prefix)
        for peer in peers { peer.stream.session.subscribe(prefix) }
    }

    func unsubscribe(bytes prefix: [UInt8]) throws {
        guard let index = subscriptions.firstIndex(of: prefix) else { return }
        subscriptions.remove(at: index)
        for peer in peers { peer.stream.session.subscribe(prefix, false) }
    }

    /// `tcp://host:port` with an IPv4 host (or `*`, `localhost`); `*` for the port when binding.
    static func parse(_ endpoint: String, operation: String, wildcardPort: Bool) throws -> (host: String, port: UInt16) {
        func invalid(_ why: String) -> ZMQError {
            ZMQError(.invalidArgument, message: "\(why) (FlowKit's ZMTP engine takes tcp://host:port)", operation: "\(operation)(\(endpoint))")
        }
        guard endpoint.hasPrefix("tcp://") else { throw invalid("only TCP endpoints are supported") }
        let address = endpoint.dropFirst("tcp://".count)
        guard let colon = address.lastIndex(of: ":") else { throw invalid("the endpoint has no port") }
        let host = String(address[..<colon])
        let portText = address[address.index(after: colon)...]
        if portText == "*", wildcardPort { return (host, 0) }
        guard let port = UInt16(portText), port > 0 else { throw invalid("'\(portText)' is not a port") }
        return (host, port)
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
    private static let tickOrigin = ContinuousClock.now

    /// The first tick of `interval` after `now`, on a grid shared by every driver.
    static func nextTick(after now: ContinuousClock.Instant, every interval: Duration) -> ContinuousClock.Instant {
        let elapsed = now - tickOrigin
        let ticks = max(0, Int64((elapsed / interval).rounded(.down))) + 1
        return tickOrigin + interval * ticks
    }

    /// How often housekeeping runs: fine enough for the shortest interval configured.
    private var housekeepingTick: Duration {
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

    /// Whether queued messages can go anywhere now. A DEALER (and the other load-balancing types)
    /// needs a peer past its handshake and under the high-water mark, and leaves its messages
    /// queued otherwise (libzmq's DEALER blocks the same way); the others route or drop.
    private var canRoute: Bool {
        guard type == .dealer || type == .push || type == .pair else { return type.canSend }
        return peers.contains { $0.isReady && !$0.stream.isClosed && $0.stream.session.queuedMessages < sendHighWaterMark }
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
    private func readEvents(of peer: Peer, room: Int, into incoming: inout [Message], now: ContinuousClock.Instant) -> Int {
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
                if type == .router { route(peer, claiming: peerIdentity) }
            case .message(let message):
                if let message = arriving(message, from: peer) {
                    incoming.append(message)
                    room -= 1
                }
            case .subscribe(let prefix):
                guard !peer.subscriptions.contains(prefix) else { break }
                peer.subscriptions.append(prefix)
                topics[prefix, default: 0] += 1
                if type == .xpub, topics[prefix] == 1 {
                    incoming.append(Message([1] + prefix))
                    room -= 1
                }
            case .cancel(let prefix):
                guard let index = peer.subscriptions.firstIndex(of: prefix) else { break }
                peer.subscriptions.remove(at: index)
                if let cancelled = unsubscribed(prefix) {
                    incoming.append(cancelled)
                    room -= 1
                }
            }
        }
        if room == 0, peer.stream.session.hasPendingInput { backlog = true }
        write(peer)
        return room
    }

    /// What the consumer sees of a message from `peer`: ROUTER prefixes the routing id, SUB
    /// keeps only what it subscribed to, PUB and XPUB take nothing but subscriptions.
    private func arriving(_ message: Message, from peer: Peer) -> Message? {
        switch type {
        case .router:
            // One allocation: the frames with the routing id in front.
            var frames: [Frame] = []
            frames.reserveCapacity(message.count + 1)
            frames.append(Frame(peer.routingID))
            frames.append(contentsOf: message)
            return Message(frames: frames)
        case .sub, .xsub:
            guard type == .xsub || matches(message, subscriptions) else { return nil }
            return message
        case .pub, .xpub:
            return nil
        default:
            return message
        }
    }

    private func matches(_ message: Message, _ prefixes: [[UInt8]]) -> Bool {
        guard let first = message.first?.bytesView else { return prefixes.contains([]) }
        return prefixes.contains { prefix in first.starts(with: prefix) }
    }

    /// XPUB: the cancel event to deliver when the last subscriber of `prefix` left.
    private func unsubscribed(_ prefix: [UInt8]) -> Message? {
        guard let count = topics[prefix] else { return nil }
        if count > 1 {
            topics[prefix] = count - 1
            return nil
        }
        topics[prefix] = nil
        return type == .xpub ? Message([0] + prefix) : nil
    }

    /// ROUTER: the peer's own identity when it sent one that is free, else a generated one
    /// (a zero byte and a counter, as libzmq makes them). A claimed identity that starts with a
    /// zero byte is not taken: those are the generated ones, and a peer that could claim one
    /// could step into the place of a connection that just closed.
    private func route(_ peer: Peer, claiming claimed: [UInt8]) {
        if let first = claimed.first, first != 0, routes[claimed] == nil {
            peer.routingID = claimed
        } else {
            nextRoutingID &+= 1
            let id = nextRoutingID
            peer.routingID = [0, UInt8(id >> 24), UInt8(id >> 16 & 0xFF), UInt8(id >> 8 & 0xFF), UInt8(id & 0xFF)]
        }
        routes[peer.routingID] = peer
    }

    // MARK: Sending

    /// Routes queued messages to their peers' sessions and writes each touched peer once.
    /// - Returns: Whether messages are left for another turn.
    private func send(now: ContinuousClock.Instant) -> Bool {
        guard type.canSend, !isFinished else { return false }
        var budget = channel.configuration.sendBatchLimit
        var completed = 0, sent = 0
        let onSent = channel.configuration.onSent
        var blocked = false
        while budget > 0, !blocked {
            let batch = takeRoutable(max: budget)
            if batch.isEmpty { break }
            for message in batch {
                switch place(message) {
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
    private func takeRoutable(max: Int) -> [Message] {
        canRoute ? channel.takeOutbound(max: max) : []
    }

    private enum Placement {
        case placed
        case dropped(ZMQError?)
        case noPeer
    }

    private func place(_ message: Message) -> Placement {
        switch type {
        case .router:
            guard message.count >= 1, let peer = routes[message[0].bytes], !peer.stream.isClosed else {
                return .dropped(routerMandatory ? ZMQError(errno: EHOSTUNREACH, operation: "send(ROUTER)") : nil)
            }
            guard peer.stream.session.queuedMessages < sendHighWaterMark else {
                return .dropped(routerMandatory ? ZMQError(errno: EAGAIN, operation: "send(ROUTER)") : nil)
            }
            peer.stream.session.send(Message(frames: Array(message.frames.dropFirst())))
            return .placed
        case .pub, .xpub:
            for peer in peers where peer.isReady && matches(message, peer.subscriptions) {
                if peer.stream.session.queuedMessages < sendHighWaterMark { peer.stream.session.send(message) }
            }
            return .placed
        default:
            // The next peer under the high-water mark, else (the batch was taken while one was
            // under it) the next one at all: the mark may be passed by one batch, never by more.
            for respectingMark in [true, false] {
                for offset in 0..<peers.count {
                    let peer = peers[(roundRobin + offset) % peers.count]
                    guard peer.isReady, !peer.stream.isClosed else { continue }
                    if respectingMark, peer.stream.session.queuedMessages >= sendHighWaterMark { continue }
                    roundRobin = (roundRobin + offset + 1) % peers.count
                    peer.stream.session.send(message)
                    return .placed
                }
            }
            return .noPeer
        }
    }

    private func undeliverable(_ message: Message, _ error: ZMQError?) {
        channel.undeliverableCount.add(1, ordering: .relaxed)
        if let error { channel.configuration.onUndeliverable?(message, error) }
    }

    private func write(_ peer: Peer) {
        guard peer.stream.session.hasOutbound, !peer.stream.isClosed else { return }
        do {
            try peer.stream.flush()
        } catch {
            drop(peer, reason: "\(error)")
        }
    }

    // MARK: Connections

    private func accept(from listener: Int32, now: ContinuousClock.Instant) {
        for _ in 0..<64 {
            let fd: Int32?
            do {
                fd = try TCPSocket.accept(listener)
            } catch {
                logger.warning("accept failed", metadata: ["flowkit.zmq.error": "\(error)"])
                return
            }
            guard let fd else { return }
            adopt(fd, dialer: nil, now: now)
        }
    }

    private func dial(_ dialer: Dialer, now: ContinuousClock.Instant) {
        dialer.retryAt = nil
        do {
            dialer.peer = adopt(try TCPSocket.connect(host: dialer.host, port: dialer.port), dialer: dialer, now: now)
        } catch {
            logger.debug("connect failed; retrying", metadata: ["flowkit.zmq.endpoint": "\(dialer.endpoint)", "flowkit.zmq.error": "\(error)"])
            scheduleRedial(dialer, now: now)
        }
    }

    @discardableResult
    private func adopt(_ fd: Int32, dialer: Dialer?, now: ContinuousClock.Instant) -> Peer {
        if var bytes = sendBufferBytes { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) }
        if var bytes = receiveBufferBytes { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) }
        var session = ZMTPSession(.init(socketType: type, identity: identity, maxMessageBytes: maxMessageBytes))
        for prefix in subscriptions { session.subscribe(prefix) }
        let peer = Peer(stream: ZMTPStream(fileDescriptor: fd, session: session), dialer: dialer, now: now)
        if handshakeInterval > .zero { peer.handshakeDeadline = now + handshakeInterval }
        peers.append(peer)
        write(peer)
        return peer
    }

    /// Closes a connection (it leaves `peers` at the end of the turn, in ``forget(_:now:)``).
    private func drop(_ peer: Peer, reason: String) {
        guard !peer.stream.isClosed else { return }
        logger.debug(
            "connection closed",
            metadata: ["flowkit.zmq.endpoint": "\(peer.dialer?.endpoint ?? "accepted")", "flowkit.zmq.reason": "\(reason)"]
        )
        peer.stream.close()
    }

    /// Clears what a closed connection leaves: its route, its subscriptions, its dialer's link.
    private func forget(_ peer: Peer, now: ContinuousClock.Instant) {
        if !peer.routingID.isEmpty, routes[peer.routingID] === peer { routes[peer.routingID] = nil }
        var cancels: [Message] = []
        for prefix in peer.subscriptions {
            if let cancel = unsubscribed(prefix) { cancels.append(cancel) }
        }
        peer.subscriptions.removeAll()
        if !cancels.isEmpty { channel.deliver(cancels) }
        if let dialer = peer.dialer, dialer.peer === peer {
            dialer.peer = nil
            if dialers.contains(where: { $0 === dialer }) { scheduleRedial(dialer, now: now) }
        }
    }

    private func scheduleRedial(_ dialer: Dialer, now: ContinuousClock.Instant) {
        dialer.retryAt = now + dialer.backoff
        if reconnectIntervalMax > reconnectInterval {
            dialer.backoff = min(dialer.backoff * 2, reconnectIntervalMax)
        }
    }

    /// Heartbeats, their timeouts, handshake timeouts and redials.
    private func keepTime(now: ContinuousClock.Instant) {
        for peer in peers where !peer.stream.isClosed {
            if let deadline = peer.handshakeDeadline, now >= deadline {
                drop(peer, reason: "no handshake within \(handshakeInterval)")
                continue
            }
            if peer.isReady, let timeout = heartbeatTimeout, now - peer.lastReceived >= timeout {
                drop(peer, reason: "nothing received for \(timeout)")
                continue
            }
            if let ping = peer.nextPing, now >= ping, let interval = heartbeatInterval {
                peer.stream.session.ping(ttl: heartbeatTimeout ?? interval * 3)
                peer.nextPing = now + interval
                write(peer)
            }
        }
        for dialer in dialers where dialer.peer == nil {
            if let retryAt = dialer.retryAt, now >= retryAt { dial(dialer, now: now) }
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
        routes.removeAll()
        for listener in listeners { Glibc.close(listener.fileDescriptor) }
        listeners.removeAll()
        dialers.removeAll()
        channel.finish(reason: reason)
    }
}
