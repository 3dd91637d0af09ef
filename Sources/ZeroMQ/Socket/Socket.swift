import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A synchronous ZeroMQ socket, owned by exactly one thread.
///
/// libzmq sockets are not thread-safe, so `Socket` is deliberately **not** `Sendable`:
/// Swift 6 refuses to move one into another task or thread. To use sockets from async
/// code, open them on an ``IOLoop``, which creates, configures and drives them on its own
/// thread and gives you a `Sendable` ``AsyncSocket``.
///
/// The socket closes itself when the last reference goes away; call ``close(linger:)``
/// to choose the linger explicitly.
public final class Socket {
    /// The socket pattern.
    public let type: SocketType
    /// The context the socket belongs to (kept alive by the socket).
    public let context: ZMQContext
    /// The raw `void *` socket for ``CZeroMQ`` calls not wrapped here; `nil` once closed.
    public private(set) var handle: UnsafeMutableRawPointer?

    /// A reusable `zmq_msg_t` for receiving, so the hot path allocates nothing of its own.
    let receiveMessage: UnsafeMutablePointer<zmq_msg_t>
    /// How many bytes of small frames the last batch receive needed (sizes the next one).
    var batchBytesHint = 256

    /// Creates a socket of `type` in `context`.
    /// - Parameters:
    ///   - context: The owning context.
    ///   - type: The socket pattern.
    /// - Throws: ``ZMQError`` (`ETERM` if the context is shutting down, `EMFILE` at the
    ///   socket limit).
    public init(context: ZMQContext, type: SocketType) throws {
        // After termination the raw context is freed: never hand it to libzmq again.
        guard !context.isTerminating else {
            throw ZMQError(errno: ETERM, operation: "zmq_socket(\(type))")
        }
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError.last("zmq_socket(\(type))")
        }
        self.handle = handle
        self.type = type
        self.context = context
        receiveMessage = .allocate(capacity: 1)
        zmq_msg_init(receiveMessage)
    }

    deinit {
        if let handle { zmq_close(handle) }
        zmq_msg_close(receiveMessage)
        receiveMessage.deallocate()
    }

    /// Whether ``close(linger:)`` has been called.
    public var isClosed: Bool { handle == nil }

    /// Binds to a local endpoint and returns the endpoint actually bound.
    ///
    /// With `tcp://127.0.0.1:*` the operating system picks a free port; the returned
    /// string (read from `ZMQ_LAST_ENDPOINT`) holds it, e.g. `tcp://127.0.0.1:41873`.
    /// - Parameter endpoint: `tcp://addr:port`, `ipc:///path`, `inproc://name`.
    /// - Returns: The resolved endpoint.
    /// - Throws: ``ZMQError``: `EADDRINUSE`, `EINVAL`, `EPROTONOSUPPORT`, `ENODEV`, ...
    @discardableResult
    public func bind(_ endpoint: String) throws -> String {
        let socket = try open("zmq_bind(\(endpoint))")
        try retrying("zmq_bind(\(endpoint))") { zmq_bind(socket, endpoint) }
        return (try? lastEndpoint()) ?? endpoint
    }

    /// Connects to a remote endpoint. Returns at once: libzmq connects (and reconnects)
    /// in the background, so the peer need not exist yet.
    /// - Parameter endpoint: `tcp://host:port`, `ipc:///path`, `inproc://name`.
    /// - Throws: ``ZMQError`` for a malformed endpoint or unsupported transport.
    public func connect(_ endpoint: String) throws {
        let socket = try open("zmq_connect(\(endpoint))")
        try retrying("zmq_connect(\(endpoint))") { zmq_connect(socket, endpoint) }
    }

    /// Disconnects from an endpoint given earlier to ``connect(_:)``.
    /// - Parameter endpoint: The endpoint string exactly as connected.
    /// - Throws: ``ZMQError`` (`ENOENT` if it was not connected).
    public func disconnect(_ endpoint: String) throws {
        let socket = try open("zmq_disconnect(\(endpoint))")
        try retrying("zmq_disconnect(\(endpoint))") { zmq_disconnect(socket, endpoint) }
    }

    /// Stops listening on an endpoint returned by ``bind(_:)``.
    /// - Parameter endpoint: The resolved endpoint (with the real port, not `*`).
    /// - Throws: ``ZMQError`` (`ENOENT` if it was not bound).
    public func unbind(_ endpoint: String) throws {
        let socket = try open("zmq_unbind(\(endpoint))")
        try retrying("zmq_unbind(\(endpoint))") { zmq_unbind(socket, endpoint) }
    }

    /// Closes the socket. Later calls on it throw ``ZMQError/Code/socketClosed``.
    /// - Parameter linger: How long unsent messages may still be delivered after close;
    ///   `nil` keeps the socket's `LINGER` option, `.zero` discards them at once.
    public func close(linger: Duration? = nil) {
        guard let socket = handle else { return }
        if let linger {
            var milliseconds = Int32(clamping: linger.milliseconds)
            zmq_setsockopt(socket, ZMQ_LINGER, &milliseconds, MemoryLayout<Int32>.size)
        }
        zmq_close(socket)
        handle = nil
    }

    /// The raw handle, or a ``ZMQError/Code/socketClosed`` error naming `operation`.
    @inline(__always)
    func open(_ operation: @autoclosure () -> String) throws -> UnsafeMutableRawPointer {
        guard let handle else { throw ZMQError.closed(operation()) }
        return handle
    }

    /// Runs a libzmq call that returns `-1` on error, retrying on `EINTR`.
    @inline(__always)
    func retrying(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws {
        while call() != 0 {
            let code = zmq_errno()
            if code != EINTR { throw ZMQError(errno: code, operation: operation()) }
        }
    }
}

@available(*, unavailable, message: "a Socket belongs to one thread; use IOLoop and AsyncSocket to share it")
extension Socket: Sendable {}

extension Duration {
    /// The duration in whole milliseconds, rounded toward zero.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
