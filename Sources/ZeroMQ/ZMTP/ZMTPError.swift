/// Why a ZMTP connection was refused or dropped by FlowKit's own ZMTP engine.
///
/// Every case is the peer's doing (bad bytes, a mechanism or socket type this side does not
/// accept, a frame over the size limit) or the peer's explicit `ERROR` command; the engine
/// closes that one connection and keeps serving the others.
public struct ZMTPError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for callers that branch on it.
    public enum Kind: Sendable, Hashable {
        /// The first bytes are not a ZMTP signature (`0xFF`, 8 bytes, `0x7F`).
        case notZMTP
        /// The peer speaks ZMTP 1 or 2; the engine speaks 3.0 and 3.1.
        case unsupportedVersion
        /// The peer wants a security mechanism this side does not use (the engine does NULL).
        case mechanismMismatch
        /// The peer's socket type cannot talk to this one (e.g. SUB to DEALER).
        case incompatibleSocketType
        /// A frame or command breaks the grammar (reserved flag bits, a short command...).
        case malformed
        /// A frame or message is larger than the configured maximum.
        case tooLarge
        /// The peer sent `ERROR` with a reason.
        case rejectedByPeer
    }

    public let kind: Kind
    public let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "ZMTP: \(message)" }
}
