/// The epochs of a log: the first seq of each run of entries one epoch ordered, oldest first. It
/// grows by one per change of leader, not per entry.
///
/// Every ``EntryLog`` keeps its own as it is written, cut and reset, so a coordinator that starts
/// leading knows the epoch of every entry it holds without reading them (the answer to a standby
/// whose log ends at a seq, ``FetchAnswer``; the epoch a duplicate was ordered in).
struct EpochHistory: Sendable, Equatable {
    private var starts: [Start] = []

    private struct Start: Sendable, Equatable {
        var seq: UInt64
        var epoch: UInt32
    }

    /// Notes the epoch of the next entry in seq order.
    mutating func note(seq: UInt64, epoch: UInt32) {
        if starts.last?.epoch != epoch { starts.append(Start(seq: seq, epoch: epoch)) }
    }

    /// Notes encoded entry records appended in seq order (``Entry/peekEpoch(_:)``: nothing is
    /// decoded).
    mutating func note(_ records: some Sequence<(seq: UInt64, record: [UInt8])>) {
        for (seq, record) in records {
            note(seq: seq, epoch: Entry.peekEpoch(record) ?? 0)
        }
    }

    /// Forgets every entry after `seq`: the log was cut back to it, or a write after it failed.
    mutating func cut(after seq: UInt64) {
        while let last = starts.last, last.seq > seq { starts.removeLast() }
    }

    /// The epoch of `seq`, if an entry at or before it was noted.
    func epoch(of seq: UInt64) -> UInt32? {
        // The last start at or before seq: a binary search over the starts.
        var low = 0
        var high = starts.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle].seq <= seq { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : starts[low - 1].epoch
    }

    /// The last seq of the latest run of entries whose epoch is at most `epoch`, in a log that
    /// ends at `logEnd`; 0 if every entry is of a later epoch. Epochs only grow along a log.
    func end(ofEpochAtMost epoch: UInt32, logEnd: UInt64) -> UInt64 {
        guard let index = starts.lastIndex(where: { $0.epoch <= epoch }) else { return 0 }
        return index + 1 < starts.count ? starts[index + 1].seq - 1 : logEnd
    }
}
