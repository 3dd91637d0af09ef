import DequeModule
import FlowKitCore
import Synchronization

/// The first digest reported for each recent `(address, seq)`, by any replica (a node's report or
/// the coordinator's own replica), and who reported it: a later digest for the same `(address,
/// seq)` that differs is a **divergence**, two replicas that disagree about an instance after the
/// same entry.
///
/// Pure, so the comparison is tested without clocks or sockets. The coordinator keeps it in a
/// ``DivergenceCheck``, off its I/O loop: a report carries a digest for every instance that
/// changed in the last second, and comparing a thousand of them held the ordering path up for most
/// of a millisecond (ten when the table grew).
struct DigestReferences {
    /// Two replicas disagree about an instance after the same entry.
    struct Divergence: Equatable, Sendable {
        var address: String
        var seq: UInt64
        /// `replica name → digest`.
        var digests: [String: String]
    }

    /// Digests of one version only are compared: during an upgrade that changes a state's shape,
    /// replicas of the two builds hash two encodings of the same state.
    private struct Key: Hashable {
        var address: String
        var seq: UInt64
        var version: UInt16
    }

    private var references: [Key: (digest: StateDigest, reporter: String)] = [:]
    /// Oldest first; a deque, as the oldest go one by one once it is full.
    private var order: Deque<Key> = []
    /// How many `(address, seq)` references are kept for comparison.
    let capacity: Int

    /// The table is sized for `capacity` at once: grown as it filled, each doubling rehashed every
    /// reference in one go (a table of 64,000 took milliseconds), a burst in the middle of a report
    /// every few seconds for the first minute under load. The memory is only touched as references
    /// come; a full table holds the same.
    init(capacity: Int = 200_000) {
        self.capacity = capacity
        references.reserveCapacity(capacity)
        order.reserveCapacity(capacity)
    }

    /// Compares a digest with the reference for its `(address, seq)`, or makes it the reference.
    mutating func compare(_ reported: ReportedDigest, reporter: String) -> Divergence? {
        let key = Key(address: reported.address, seq: reported.seq, version: reported.version)
        guard let reference = references[key] else {
            references[key] = (reported.digest, reporter)
            order.append(key)
            while order.count > capacity, let old = order.popFirst() {
                references[old] = nil
            }
            return nil
        }
        guard reference.digest != reported.digest, reference.reporter != reporter else { return nil }
        return Divergence(
            address: reported.address, seq: reported.seq,
            digests: [reference.reporter: reference.digest.description, reporter: reported.digest.description]
        )
    }

    /// Compares every digest of one replica; the divergences in address order.
    mutating func compare(_ digests: [ReportedDigest], reporter: String) -> [Divergence] {
        var found: [Divergence] = []
        for reported in digests {
            if let divergence = compare(reported, reporter: reporter) { found.append(divergence) }
        }
        return found.sorted { ($0.address, $0.seq) < ($1.address, $1.seq) }
    }
}

/// The coordinator's ``DigestReferences``, shared by the tasks that compare digests: the one that
/// decodes the nodes' reports and the coordinator's replica. Neither runs on the I/O loop.
final class DivergenceCheck: Sendable {
    private let references: Mutex<DigestReferences>

    init(capacity: Int = 200_000) {
        references = Mutex(DigestReferences(capacity: capacity))
    }

    /// Compares a replica's digests with the references; the divergences in address order.
    func compare(_ digests: [ReportedDigest], reporter: String) -> [DigestReferences.Divergence] {
        guard !digests.isEmpty else { return [] }
        return references.withLock { $0.compare(digests, reporter: reporter) }
    }
}
