/// A request the client could not complete.
public enum ClusterClientError: Error, Sendable, CustomStringConvertible {
    /// No answer in time: the node is unreachable or overloaded.
    case timedOut(Duration)
    /// The client was closed.
    case closed
    /// The node answered with something that does not fit the request.
    case unexpectedReply(String)

    public var description: String {
        switch self {
        case .timedOut(let timeout): "no answer within \(timeout): is the node running, and is the endpoint right?"
        case .closed: "the client was closed"
        case .unexpectedReply(let reply): "the node answered with an unexpected reply: \(reply)"
        }
    }
}
