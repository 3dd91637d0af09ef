import Foundation

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

/// Within one snapshot: its encoding runs in bursts of at most 5 ms of CPU, each followed by a
/// sleep three times as long, so it takes at most a quarter of a core at any moment, not a whole
/// one for as long as it lasts.
///
/// Nice 19 is not enough: each process is a scheduling group of its own (its session's autogroup;
/// under systemd, its service's cgroup), within which the encoding ranks below the loop, but
/// between processes a group competes as an equal whatever its threads' nice. A node whose loop
/// waits for input lends its whole share to its encoding: at a million instances, the three nodes'
/// snapshots took 55 % of both cores for half a second (`perf sched`) while a node's loop, with
/// events waiting, waited 376 ms for a core.
struct SnapshotDutyCycle {
    static let burstMicros: UInt64 = 5_000
    /// How many times a burst's CPU it sleeps after it.
    static let restPerBurst: UInt64 = 3
    private var burstStarted = ThreadCPUClock.micros()

    /// Sleeps if the burst so far took its CPU; call it every few milliseconds of work.
    mutating func restIfDue() {
        let used = ThreadCPUClock.micros() - burstStarted
        guard used >= Self.burstMicros else { return }
        usleep(useconds_t(used * Self.restPerBurst))
        burstStarted = ThreadCPUClock.micros()
    }
}
