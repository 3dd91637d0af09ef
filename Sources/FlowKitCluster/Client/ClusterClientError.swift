/// A request the client could not complete: the node did not answer, the client was closed, or the
/// answer did not fit the request. A node's refusal is a ``ProtocolError`` instead.
///
/// Switch on ``code``; new codes may be added without breaking callers.
public struct ClusterClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a value to switch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case timedOut, closed, unexpectedReply
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No answer in time: the node is unreachable or overloaded.
        public static let timedOut = Code(.timedOut)
        /// The client (or the ``RemoteFlow``) was closed.
        public static let closed = Code(.closed)
        /// The node answered with something that does not fit the request.
        public static let unexpectedReply = Code(.unexpectedReply)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// No answer within `timeout`.
    public static func timedOut(_ timeout: Duration) -> Self {
        Self(.timedOut, "no answer within \(timeout): is the node running, and is the endpoint right?")
    }

    /// The client was closed.
    public static let closed = Self(.closed, "the client was closed")

    /// The node answered `reply`, which does not fit the request.
    public static func unexpectedReply(_ reply: String) -> Self {
        Self(.unexpectedReply, "the node answered with an unexpected reply: \(reply)")
    }

    public var description: String { message }
}
