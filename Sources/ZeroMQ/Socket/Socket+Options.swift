import CZeroMQ

/// Readiness flags from `ZMQ_EVENTS` (and `zmq_poll`).
public struct PollEvents: OptionSet, Sendable, Hashable {
    public let rawValue: Int16
    public init(rawValue: Int16) { self.rawValue = rawValue }

    /// At least one whole message can be received without blocking.
    public static let readable = PollEvents(rawValue: Int16(ZMQ_POLLIN))
    /// At least one message can be sent without blocking.
    public static let writable = PollEvents(rawValue: Int16(ZMQ_POLLOUT))
}

extension Socket {
    /// Sets a socket option.
    /// - Parameters:
    ///   - option: The option, e.g. ``SocketOption/sendHighWaterMark``.
    ///   - value: Its new value.
    /// - Throws: ``ZMQError`` (`EINVAL` for a bad value or an option this type lacks).
    public func setOption<Value>(_ option: SocketOption<Value>, _ value: Value) throws {
        let socket = try open("zmq_setsockopt(\(option))")
        try retrying("zmq_setsockopt(\(option))") { Value.store(value, socket: socket, option: option.rawValue) }
    }

    /// Reads a socket option.
    /// - Parameter option: The option to read.
    /// - Returns: Its current value.
    /// - Throws: ``ZMQError`` (`EINVAL` for write-only options).
    public func option<Value>(_ option: SocketOption<Value>) throws -> Value {
        let socket = try open("zmq_getsockopt(\(option))")
        guard let value = Value.load(socket: socket, option: option.rawValue) else {
            throw ZMQError.last("zmq_getsockopt(\(option))")
        }
        return value
    }

    /// Subscribes a SUB socket to a binary prefix (``SocketSetup/subscribe(_:)`` takes text).
    /// - Parameter prefix: The prefix bytes; empty subscribes to everything.
    public func subscribe(bytes prefix: [UInt8]) throws {
        try setOption(.subscribe, prefix)
    }

    /// Removes one subscription made with ``subscribe(bytes:)``.
    /// - Parameter prefix: The same prefix as subscribed.
    public func unsubscribe(bytes prefix: [UInt8]) throws {
        try setOption(.unsubscribe, prefix)
    }

    /// The last endpoint bound or connected (`ZMQ_LAST_ENDPOINT`), with the real port.
    public func lastEndpoint() throws -> String {
        try option(SocketOption<String>(rawValue: ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT"))
    }

    /// What the socket is ready for right now (`ZMQ_EVENTS`).
    public func events() throws -> PollEvents {
        let raw = try option(SocketOption<Int32>(rawValue: ZMQ_EVENTS, name: "ZMQ_EVENTS"))
        return PollEvents(rawValue: Int16(truncatingIfNeeded: raw))
    }

    /// Whether the frame just received is followed by more frames (`ZMQ_RCVMORE`).
    public func hasMoreFrames() throws -> Bool {
        try option(SocketOption<Bool>(rawValue: ZMQ_RCVMORE, name: "ZMQ_RCVMORE"))
    }

    /// The file descriptor libzmq signals on (`ZMQ_FD`), for integrating with other
    /// event loops. It is edge-triggered: after it fires, read ``events()`` and drain.
    public func fileDescriptor() throws -> Int32 {
        try option(SocketOption<Int32>(rawValue: ZMQ_FD, name: "ZMQ_FD"))
    }
}
