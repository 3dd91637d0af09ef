import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ZMTPDriver {
    // MARK: Connections

    func accept(from listener: Int32, now: ContinuousClock.Instant) {
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

    func dial(_ dialer: Dialer, now: ContinuousClock.Instant) {
        dialer.retryAt = nil
        do {
            dialer.peer = adopt(try TCPSocket.connect(host: dialer.host, port: dialer.port), dialer: dialer, now: now)
        } catch {
            logger.debug("connect failed; retrying", metadata: ["flowkit.zmq.endpoint": "\(dialer.endpoint)", "flowkit.zmq.error": "\(error)"])
            scheduleRedial(dialer, now: now)
        }
    }

    @discardableResult
    func adopt(_ fd: Int32, dialer: Dialer?, now: ContinuousClock.Instant) -> Peer {
        if var bytes = sendBufferBytes { setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) }
        if var bytes = receiveBufferBytes { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) }
        var session = ZMTPSession(.init(socketType: type, identity: identity, maxMessageBytes: maxMessageBytes))
        for prefix in (routing as? SubscribeRouting)?.prefixes ?? [] { session.subscribe(prefix) }
        let peer = Peer(stream: ZMTPStream(fileDescriptor: fd, session: session), dialer: dialer, now: now)
        if handshakeInterval > .zero { peer.handshakeDeadline = now + handshakeInterval }
        peers.append(peer)
        write(peer)
        return peer
    }

    /// Closes a connection (it leaves `peers` at the end of the turn, in ``forget(_:now:)``).
    func drop(_ peer: Peer, reason: String) {
        guard !peer.stream.isClosed else { return }
        logger.debug(
            "connection closed",
            metadata: ["flowkit.zmq.endpoint": "\(peer.dialer?.endpoint ?? "accepted")", "flowkit.zmq.reason": "\(reason)"]
        )
        peer.stream.close()
    }

    /// Clears what a closed connection leaves: its route, its subscriptions, its dialer's link.
    func forget(_ peer: Peer, now: ContinuousClock.Instant) {
        routing.forget(peer)
        var cancels: [Message] = []
        for prefix in peer.subscriptions {
            if let cancel = routing.unsubscribed(prefix) { cancels.append(cancel) }
        }
        peer.subscriptions.removeAll()
        if !cancels.isEmpty { channel.deliver(cancels) }
        if let dialer = peer.dialer, dialer.peer === peer {
            dialer.peer = nil
            if dialers.contains(where: { $0 === dialer }) { scheduleRedial(dialer, now: now) }
        }
    }

    func scheduleRedial(_ dialer: Dialer, now: ContinuousClock.Instant) {
        dialer.retryAt = now + dialer.backoff
        if reconnectIntervalMax > reconnectInterval {
            dialer.backoff = min(dialer.backoff * 2, reconnectIntervalMax)
        }
    }

    /// Heartbeats, their timeouts, handshake timeouts and redials.
    func keepTime(now: ContinuousClock.Instant) {
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
}
