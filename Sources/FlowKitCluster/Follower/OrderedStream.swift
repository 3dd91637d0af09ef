/// A replica's view of the ordered log: the seq it has applied, the entries that arrived ahead of
/// it, and the range it is missing.
///
/// The publish socket drops messages silently (on high-water marks, on reconnects, while joining),
/// so entries can arrive with gaps, and repaired ranges can overlap what the socket delivered.
/// This state machine makes both harmless: an entry is released for applying only when every
/// entry before it has been, duplicates are dropped, and ``missing`` says what to fetch from the
/// coordinator's sync socket. It never skips a gap, and never releases an entry its process cannot
/// read (``ReadableVersions``): it stops there for good.
struct OrderedStream {
    /// The last seq released for applying.
    private(set) var applied: UInt64
    /// The highest seq known to exist (from entries and heartbeats).
    private(set) var knownHead: UInt64
    /// Entries received ahead of `applied + 1`, by seq.
    private var early: [UInt64: Entry] = [:]
    /// The lowest seq in `early`: ``missing`` is asked for on every arrival, and scanning up to
    /// `maxEarly` keys each time would cost a node catching up under load more than the entries.
    private var earliestWaiting: UInt64?
    /// The most entries kept ahead of a gap; beyond it, arrivals are dropped and fetched again.
    let maxEarly: Int
    let versions: ReadableVersions
    /// The entry after ``applied`` when this process cannot read it: nothing is released from
    /// there on, and nothing is fetched.
    private(set) var unreadable: UnreadableEntry?

    init(applied: UInt64 = 0, maxEarly: Int = 100_000, versions: ReadableVersions = .all) {
        self.applied = applied
        self.knownHead = applied
        self.maxEarly = maxEarly
        self.versions = versions
    }

    /// Stops for good before a snapshot this process cannot read: nothing more is released.
    mutating func stop(at unreadable: UnreadableEntry) {
        self.unreadable = self.unreadable ?? unreadable
    }

    /// Whether `entry`, the next in order, may be released; notes the wall when it may not.
    private mutating func mayRelease(_ entry: Entry) -> Bool {
        guard unreadable == nil else { return false }
        unreadable = versions.unreadable(entry)
        return unreadable == nil
    }

    /// How many entries wait behind a gap.
    var waitingCount: Int { early.count }

    /// Takes entries in any order, from the publish socket or a sync reply.
    ///
    /// - Returns: The entries that can be applied now, in seq order: the caller applies all of them.
    mutating func receive(_ entries: some Sequence<Entry>) -> [Entry] {
        var ready: [Entry] = []
        var drained = false
        for entry in entries {
            knownHead = max(knownHead, entry.seq)
            if entry.seq == applied + 1, mayRelease(entry) {
                ready.append(entry)
                applied = entry.seq
                while let next = early[applied + 1], mayRelease(next) {
                    early[applied + 1] = nil
                    ready.append(next)
                    applied = next.seq
                    drained = true
                }
            } else if entry.seq > applied, early.count < maxEarly {
                // An entry after a gap, or the unreadable one itself, which waits at the front.
                // When full, later entries are dropped: the repair that fills the gap fetches them.
                if early.updateValue(entry, forKey: entry.seq) == nil {
                    earliestWaiting = min(earliestWaiting ?? entry.seq, entry.seq)
                }
            }
            // entry.seq <= applied: a duplicate (a repair overlapping the live stream).
        }
        // Draining removed the lowest waiting entries; found again once per filled gap.
        if drained { earliestWaiting = early.keys.min() }
        return ready
    }

    /// Notes the coordinator's head from a heartbeat, so an idle gap is noticed.
    mutating func noteHead(_ head: UInt64) {
        knownHead = max(knownHead, head)
    }

    /// The entries to fetch before anything newer can be applied, or `nil` when nothing is missing.
    var missing: ClosedRange<UInt64>? {
        guard knownHead > applied, unreadable == nil else { return nil }
        let end = earliestWaiting.map { $0 - 1 } ?? knownHead
        return end > applied ? (applied + 1)...end : nil
    }

    /// Jumps to `seq` after restoring a snapshot taken there: entries at or below it are dropped.
    ///
    /// - Returns: Early entries that can now be applied, in order.
    mutating func reset(to seq: UInt64) -> [Entry] {
        applied = seq
        knownHead = max(knownHead, seq)
        let waiting = early.values.filter { $0.seq > seq }
        early = [:]
        earliestWaiting = nil
        return receive(waiting.sorted { $0.seq < $1.seq })
    }
}
