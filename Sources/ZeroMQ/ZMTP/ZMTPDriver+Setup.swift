import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ZMTPDriver {
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
            guard let flag = value as? Bool, let router = routing as? RouterRouting else { throw invalid() }
            router.mandatory = flag
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
        guard let subscriber = routing as? SubscribeRouting else {
            throw ZMQError(.invalidArgument, message: "only SUB and XSUB sockets subscribe", operation: "subscribe")
        }
        subscriber.subscribe(prefix)
        for peer in peers { peer.stream.session.subscribe(prefix) }
    }

    func unsubscribe(bytes prefix: [UInt8]) throws {
        guard let subscriber = routing as? SubscribeRouting, subscriber.unsubscribe(prefix) else { return }
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
}
