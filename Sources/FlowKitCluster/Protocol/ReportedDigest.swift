import FlowKitCore

/// One instance's digest in a report: the seq of the last entry applied to it, and the digest of
/// its state after that entry.
@_spi(Wire) public struct ReportedDigest: Sendable, Equatable {
    public var address: String
    public var seq: UInt64
    public var digest: StateDigest
    /// The version of the flow whose state it hashes, as the reporter's build runs it (its
    /// report's ``NodeReport/flowVersions``; not in the digest frame): states of two versions have
    /// two shapes, so their digests are compared only with digests of the same version.
    public var version: UInt16

    public init(address: String, seq: UInt64, digest: StateDigest, version: UInt16 = 1) {
        self.address = address
        self.seq = seq
        self.digest = digest
        self.version = version
    }

    /// The version `versions` names for the flow of `address` (1 when it names none).
    static func version(of address: String, in versions: [String: UInt16]) -> UInt16 {
        Address.plainFlowName(of: address).flatMap { versions[String($0)] } ?? 1
    }
}
