import CZeroMQ
import Synchronization

/// A libzmq context: the owner of libzmq's own I/O threads and of every socket made from it.
///
/// The context is thread-safe and `Sendable`. Sockets keep it alive; it is terminated by
/// ``terminate()`` (or when the last reference goes away), which never blocks a thread
/// of Swift's cooperative pool: `zmq_ctx_term` runs on a dedicated thread.
///
/// Termination first calls `zmq_ctx_shutdown` (every blocking call on a socket of this
/// context returns `ETERM`), then asks each ``IOLoop`` on the context to close its
/// sockets with linger 0, then waits for `zmq_ctx_term`. Synchronous ``Socket``s you own
/// must be closed by their owning thread for termination to finish; every call on them
/// fails with ``ZMQError/Code/terminated`` once shutdown has begun.
public final class ZMQContext: Sendable {
    /// Options that must be chosen when the context is created.
    public struct Configuration: Sendable {
        /// The number of libzmq I/O threads (`ZMQ_IO_THREADS`); 1 handles ~1 Gb/s.
        public var ioThreads: Int32
        /// The maximum number of sockets (`ZMQ_MAX_SOCKETS`), or `nil` for libzmq's default.
        public var maxSockets: Int32?
        /// `ZMQ_BLOCKY`. `false` (the default here, unlike libzmq) gives new sockets a
        /// `LINGER` of 0, so termination never waits for messages no peer will take; set
        /// ``SocketOption/linger`` on a socket that must drain before it closes.
        public var blocky: Bool

        /// - Parameters:
        ///   - ioThreads: The number of libzmq I/O threads.
        ///   - maxSockets: The socket limit, or `nil` for libzmq's default (1023).
        ///   - blocky: Whether new sockets linger forever by default (libzmq's default).
        public init(ioThreads: Int32 = 1, maxSockets: Int32? = nil, blocky: Bool = false) {
            self.ioThreads = ioThreads
            self.maxSockets = maxSockets
            self.blocky = blocky
        }
    }

    private struct State {
        var terminating = false
        var shutdownHooks: [ObjectIdentifier: @Sendable () -> Void] = [:]
    }

    /// The raw `void *` context, for use with ``CZeroMQ`` functions not wrapped here.
    public nonisolated(unsafe) let handle: UnsafeMutableRawPointer
    private let state = Mutex(State())
    private let termination = OneShot<Void>()

    /// Creates a context.
    /// - Parameter configuration: The number of I/O threads and the socket limit.
    /// - Throws: ``ZMQError`` if libzmq cannot create the context or rejects an option.
    public init(_ configuration: Configuration = Configuration()) throws {
        guard let handle = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        self.handle = handle
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, configuration.ioThreads) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_IO_THREADS, \(configuration.ioThreads))")
            zmq_ctx_term(handle)
            throw error
        }
        if zmq_ctx_set(handle, ZMQ_BLOCKY, configuration.blocky ? 1 : 0) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_BLOCKY)")
            zmq_ctx_term(handle)
            throw error
        }
        if let maxSockets = configuration.maxSockets, zmq_ctx_set(handle, ZMQ_MAX_SOCKETS, maxSockets) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_MAX_SOCKETS, \(maxSockets))")
            zmq_ctx_term(handle)
            throw error
        }
    }

    /// Convenience for a context with `ioThreads` libzmq I/O threads.
    /// - Parameter ioThreads: The number of libzmq I/O threads.
    public convenience init(ioThreads: Int32) throws {
        try self.init(Configuration(ioThreads: ioThreads))
    }

    deinit {
        // Every socket and loop holds the context, so none is left; term is quick, but
        // deinit may run on a cooperative thread, so it still goes to its own thread.
        if beginTermination() {
            let handle = UncheckedSendable(handle)
            IOThread.start(name: "zmq-ctx-term") { zmq_ctx_term(handle.value) }
        }
    }

    /// Whether ``shutdown()`` or ``terminate()`` has been called.
    public var isTerminating: Bool { state.withLock { $0.terminating } }

    /// Starts shutting the context down without waiting: blocking calls on its sockets
    /// return `ETERM` and every ``IOLoop`` on it closes its sockets. Idempotent.
    public func shutdown() {
        let hooks: [@Sendable () -> Void] = state.withLock { state in
            state.terminating = true
            let hooks = Array(state.shutdownHooks.values)
            state.shutdownHooks.removeAll()
            return hooks
        }
        zmq_ctx_shutdown(handle)
        for hook in hooks { hook() }
    }

    /// Shuts the context down and waits until `zmq_ctx_term` returns, on a dedicated thread.
    ///
    /// Safe to call from any task and more than once; later callers wait for the same
    /// termination. Returns once every socket of the context has been closed.
    public func terminate() async {
        shutdown()
        if beginTermination() {
            let handle = UncheckedSendable(handle)
            let termination = self.termination
            IOThread.start(name: "zmq-ctx-term") {
                while zmq_ctx_term(handle.value) != 0 && zmq_errno() == EINTR {}
                termination.fulfill(())
            }
        }
        await termination.wait()
    }

    /// Registers work to run when the context shuts down (used by ``IOLoop``).
    /// - Returns: `false` if the context is already shutting down (the hook is not kept).
    func addShutdownHook(_ owner: ObjectIdentifier, _ hook: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard !state.terminating else { return false }
            state.shutdownHooks[owner] = hook
            return true
        }
    }

    func removeShutdownHook(_ owner: ObjectIdentifier) {
        _ = state.withLock { $0.shutdownHooks.removeValue(forKey: owner) }
    }

    private let termStarted = Atomic<Bool>(false)

    /// Returns `true` exactly once, for the caller that must run `zmq_ctx_term`.
    private func beginTermination() -> Bool {
        !termStarted.exchange(true, ordering: .acquiringAndReleasing)
    }
}
