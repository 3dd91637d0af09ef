import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from libzmq or from this wrapper, carrying enough context to act on.
///
/// Errors that come from libzmq keep the `errno` value, its symbolic name (`"EAGAIN"`,
/// `"ETERM"`, `"EHOSTUNREACH"`, ...), the text of `zmq_strerror` and the operation that
/// failed, for example `zmq_bind(tcp://127.0.0.1:99999)`. Errors raised by the wrapper
/// itself (a closed socket, malformed Z85 text) use the same shape with `errno == 0`.
public struct ZMQError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is; compare with the static members, e.g. `.terminated`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        enum Base: Hashable, Sendable {
            case system(Int32)
            case socketClosed
            case loopStopped
            case invalidArgument
        }

        let base: Base

        /// The code for a raw `errno` value as reported by libzmq.
        public static func errno(_ value: Int32) -> Code { Code(base: .system(value)) }

        /// `EAGAIN`: the operation would block (never thrown by non-blocking calls here).
        public static let wouldBlock = Code.errno(EAGAIN)
        /// `ETERM`: the context was terminated.
        public static let terminated = Code.errno(ZMQ_HAUSNUMERO + 53)
        /// `EHOSTUNREACH`: a ROUTER with `ROUTER_MANDATORY` had no peer with that routing id.
        public static let hostUnreachable = Code.errno(EHOSTUNREACH)
        /// `EPROTO`: a protocol error, for example a CURVE misconfiguration.
        public static let protocolError = Code.errno(EPROTO)
        /// `EINVAL`: an invalid argument, endpoint or option value.
        public static let invalid = Code.errno(EINVAL)
        /// `EFSM`: the operation is not allowed in the socket's current state (REQ/REP order).
        public static let wrongState = Code.errno(ZMQ_HAUSNUMERO + 51)
        /// `EADDRINUSE`: the endpoint is already bound.
        public static let addressInUse = Code.errno(EADDRINUSE)
        /// The socket was closed (by ``AsyncSocket/close(linger:)``, the loop or the context).
        public static let socketClosed = Code(base: .socketClosed)
        /// The ``IOLoop`` was stopped before the operation could run.
        public static let loopStopped = Code(base: .loopStopped)
        /// The wrapper rejected an argument before calling libzmq (e.g. bad Z85 length).
        public static let invalidArgument = Code(base: .invalidArgument)

        public var description: String {
            switch base {
            case .system(let value): return ZMQError.symbolicName(of: value)
            case .socketClosed: return "SOCKET_CLOSED"
            case .loopStopped: return "LOOP_STOPPED"
            case .invalidArgument: return "INVALID_ARGUMENT"
            }
        }
    }

    /// The failure kind.
    public let code: Code
    /// The `errno` value reported by libzmq, or `0` for errors raised by the wrapper.
    public let errno: Int32
    /// The symbolic name of the error, e.g. `"EHOSTUNREACH"` or `"SOCKET_CLOSED"`.
    public var name: String { code.description }
    /// The human-readable message (`zmq_strerror` for libzmq errors).
    public let message: String
    /// The operation that failed, e.g. `zmq_connect(tcp://host:5555)`.
    public let operation: String

    /// Creates an error from an explicit `errno` value.
    /// - Parameters:
    ///   - errno: The `errno` value as reported by libzmq.
    ///   - operation: What was being attempted, shown in ``description``.
    public init(errno: Int32, operation: String) {
        self.code = .errno(errno)
        self.errno = errno
        self.message = String(cString: zmq_strerror(errno))
        self.operation = operation
    }

    /// Creates a wrapper-level error that did not come from libzmq.
    /// - Parameters:
    ///   - code: A non-errno code such as ``Code/socketClosed`` or ``Code/invalidArgument``.
    ///   - message: What went wrong and how to fix it.
    ///   - operation: What was being attempted.
    public init(_ code: Code, message: String, operation: String) {
        self.code = code
        if case .system(let value) = code.base { self.errno = value } else { self.errno = 0 }
        self.message = message
        self.operation = operation
    }

    /// Captures the current `zmq_errno()` for `operation`.
    static func last(_ operation: @autoclosure () -> String) -> ZMQError {
        ZMQError(errno: zmq_errno(), operation: operation())
    }

    static func closed(_ operation: String) -> ZMQError {
        ZMQError(.socketClosed, message: "the socket is closed; open a new one", operation: operation)
    }

    public var description: String {
        if errno != 0 {
            return "\(operation) failed: \(name) (errno \(errno)): \(message)\(ZMQError.hint(for: errno))"
        }
        return "\(operation) failed: \(name): \(message)"
    }
}
