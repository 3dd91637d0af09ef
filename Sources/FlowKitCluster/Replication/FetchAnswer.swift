/// The leader's answer to one FETCH, decided from its log's epochs.
enum FetchAnswer: Equatable {
    /// Entries from this seq on.
    case entries(from: UInt64)
    /// Nothing new yet: hold the FETCH until something is written (or a while passes).
    case wait
    /// The standby's log disagrees after `keep`: it cuts back to there and fetches again.
    case truncate(keep: UInt64)
    /// The standby is behind the leader's oldest retained entry: it needs a snapshot.
    case behindRetention(firstSeq: UInt64)

    /// - Parameters:
    ///   - written: The leader's durable log end.
    ///   - firstSeq: The oldest seq its log still holds.
    ///   - epochs: The epochs of its log.
    init(_ fetch: FetchRequest, written: UInt64, firstSeq: UInt64, epochs: EpochHistory) {
        // Below the retained log the epochs are gone, so agreement cannot be checked there.
        if fetch.end < firstSeq, fetch.end > 0 || firstSeq > 1 {
            self = .behindRetention(firstSeq: firstSeq)
            return
        }
        // `endEpoch` 0 past seq 0: the standby's log holds nothing after a snapshot it installed
        // before a restart, and no record says the epoch of the entry the snapshot ends at. A
        // snapshot holds only committed entries, and every leader's log holds those: it agrees.
        // (Asked to cut instead, it could only refuse, for good: simulation seed 757.)
        if fetch.end > 0, fetch.endEpoch != 0 || fetch.end > written {
            let mine = fetch.end <= written ? epochs.epoch(of: fetch.end) : nil
            if mine != fetch.endEpoch {
                // Where the two logs still agree: the end of the standby's last epoch in this log
                // (or of the latest earlier one), and before the entry that disagrees.
                let agreed = epochs.end(ofEpochAtMost: fetch.endEpoch, logEnd: written)
                self = .truncate(keep: min(agreed, fetch.end - 1))
                return
            }
        }
        self = fetch.end >= written ? .wait : .entries(from: fetch.end + 1)
    }
}
