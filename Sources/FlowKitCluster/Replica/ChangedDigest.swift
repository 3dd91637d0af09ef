import FlowKitCore

/// An instance's last digest as the combined digest holds it: the seq of the state it describes,
/// and its term in the combined digest (replacing it XORs the old term out without hashing again).
/// Kept on the instance: a table of them cost a million instances ~120 bytes each.
struct DigestedState {
    let seq: UInt64
    let term: DigestAccumulator.Term
}

/// A digest computed for an instance: the seq of the state it describes, and the digest.
struct ChangedDigest: Sendable, Equatable {
    let seq: UInt64
    let digest: StateDigest

}

extension ReportedDigest {
    /// Changed instances' digests as a report carries them.
    static func list(_ changed: [Address: ChangedDigest]) -> [ReportedDigest] {
        changed.map { address, changed in ReportedDigest(address: address.description, seq: changed.seq, digest: changed.digest) }
    }
}
