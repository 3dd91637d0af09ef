/// A message that breaks the wire protocol, or a request the receiver refuses.
///
/// The code travels in `ErrorReply` messages, so a client learns why its message was refused; the
/// receiver counts every one by code and keeps serving.
public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why a message was refused. The raw values are part of the wire protocol (docs/PROTOCOL.md).
    public enum Code: UInt16, Sendable, CaseIterable, CustomStringConvertible {
        /// The message has fewer or more frames than its type needs.
        case wrongFrameCount = 1
        /// The header does not start with the magic bytes `FK`.
        case badMagic = 2
        /// The protocol version is not one this process speaks.
        case unsupportedVersion = 3
        /// A header or record ends before its fields do.
        case truncated = 4
        /// The message type is unknown, or not accepted on this socket.
        case unknownType = 5
        /// A field has an impossible value (bad UTF-8, an unknown enum value, a bad address).
        case malformed = 6
        /// No flow is registered under the name in the address.
        case unknownFlow = 7
        /// The payload does not decode as the flow's `Event` type.
        case undecodableEvent = 8
        /// The message is larger than the configured maximum.
        case oversize = 9
        /// The receiver's queues are full: retry later.
        case overloaded = 10
        /// The node cannot reach the coordinator, so it cannot order the event now: retry later.
        case coordinatorUnavailable = 11
        /// No such flow instance, or the requested log range was compacted away.
        case notFound = 12
        /// The payload codec is not one the flow accepts.
        case unsupportedCodec = 13
        /// The receiver failed for a reason of its own (disk full, shutting down).
        case internalError = 14
        /// The connection has not said HELLO (or the coordinator restarted and forgot it): a node
        /// says HELLO again and resends. Only a node's own connection may submit.
        case helloFirst = 15
        /// The connection may not do this: a SUBMIT or NODE_REPORT that names another node than
        /// the one this connection said HELLO as.
        case forbidden = 16
        /// An effect's submission under an ownership term its instance's takeover ended: the
        /// effect moved to another node while this one was down, paused or cut off. Never retried.
        case staleOwner = 17
        /// The entry's flow version is newer than this process's build of the flow reads
        /// (`ReplicatedFlow.version`): the process must be upgraded first. Worth retrying once it is.
        case versionUnreadable = 18
        /// The event's flow version is newer than a live node running the flow reads: the cluster
        /// has not agreed on it yet (a rolling upgrade is under way). Worth retrying once every
        /// node of the flow runs that version.
        case versionNotAgreed = 19

        public var description: String {
            switch self {
            case .wrongFrameCount: "wrong frame count"
            case .badMagic: "bad magic"
            case .unsupportedVersion: "unsupported version"
            case .truncated: "truncated"
            case .unknownType: "unknown message type"
            case .malformed: "malformed"
            case .unknownFlow: "unknown flow"
            case .undecodableEvent: "undecodable event"
            case .oversize: "oversize"
            case .overloaded: "overloaded, retry"
            case .coordinatorUnavailable: "coordinator unavailable, retry"
            case .notFound: "not found"
            case .unsupportedCodec: "unsupported codec"
            case .internalError: "internal error"
            case .helloFirst: "hello first"
            case .forbidden: "forbidden"
            case .staleOwner: "stale owner"
            case .versionUnreadable: "version unreadable"
            case .versionNotAgreed: "version not agreed"
            }
        }

        /// The label metrics count rejects under: `wrong_frame_count`, `unknown_flow`, …
        public var metricLabel: String {
            switch self {
            case .overloaded: "overloaded"
            case .coordinatorUnavailable: "coordinator_unavailable"
            default: description.split(separator: " ").joined(separator: "_")
            }
        }
    }

    public var code: Code
    /// What was wrong and, where there is one, how to fix it.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

extension ProtocolError {
    /// An event of `flow` at a version this process's build does not read: the same words at
    /// every wall (a coordinator's admission, a node that stops applying).
    static func versionUnreadable(flow: String, version: UInt16, reads: ClosedRange<UInt16>) -> ProtocolError {
        let fix = version > reads.upperBound ? "upgrade it" : "give the flow a migration step from that version"
        return ProtocolError(
            .versionUnreadable,
            "flow \"\(flow)\" at version \(version): this process reads \(UnreadableEntry.describe(reads)); \(fix) (docs/VERSIONING.md)"
        )
    }
}
