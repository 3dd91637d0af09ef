/// How often a process may save a snapshot of every instance: at most 5 % of a core, measured.
///
/// A snapshot encodes every instance's state, held or changed: a million of them take seconds of
/// CPU, and a node saving one every 10 s (or a coordinator every 100,000 entries, 5 s at 20,000/s)
/// would spend half a core on it, taken from the order on a small machine. So after each snapshot
/// the next waits at least 19 times the CPU the last one took: the interval (or entry count) still
/// sets how often while snapshots are cheap, and what they cost sets it once they are not. The log
/// behind a snapshot grows meanwhile; it is read after a restart (a node's, from the coordinator)
/// or kept a while longer (a coordinator's).
struct SnapshotPacing: Sendable {
    /// Snapshots take at most 1 / `share` of a core.
    static let share: UInt64 = 20
    /// No snapshot before this time (µs).
    private(set) var notBefore: UInt64 = 0
    /// What the last snapshot cost, in µs of CPU.
    private(set) var lastCost: UInt64 = 0

    /// Whether a snapshot may start at `now`.
    func allows(now: UInt64) -> Bool { now >= notBefore }

    /// A snapshot finished at `now`, having taken `cost` µs of CPU.
    mutating func saved(cost: UInt64, now: UInt64) {
        lastCost = cost
        notBefore = now + cost * (Self.share - 1)
    }
}
