import FlowKitCore

/// An order-independent digest of a set of `(address, digest)` pairs that can be updated one pair
/// at a time: the XOR of SHA-256(address, digest) over all pairs, truncated to 128 bits.
struct DigestAccumulator {
    /// One pair's share: SHA-256(address, digest), truncated. Adding a pair and removing it are the
    /// same XOR, so a replaced digest leaves with the term it came in with.
    struct Term: Sendable, Equatable {
        let high: UInt64
        let low: UInt64

        /// A term as ``RestingInstances`` keeps it.
        init(high: UInt64, low: UInt64) {
            (self.high, self.low) = (high, low)
        }

        init(_ address: Address, _ digest: StateDigest) {
            let pair = StateDigest(combining: [(key: address.description, digest: digest)])
            (high, low) = (pair.high, pair.low)
        }
    }

    private var high: UInt64 = 0
    private var low: UInt64 = 0

    /// Adds a pair's term, or removes it if it is in.
    mutating func toggle(_ term: Term) {
        high ^= term.high
        low ^= term.low
    }

    var digest: StateDigest { StateDigest(high: high, low: low) }
}
