/// The coordinator's ordering state machine: it turns submissions into entries with consecutive
/// seqs, drops duplicates, and rolls back what the log failed to make durable.
///
/// Pure and synchronous, so it is tested without sockets or disks. The coordinator owns one,
/// feeds it submissions, hands the entries to the log, and reports the outcome back with
/// ``committed(through:)`` or ``rollBack()``.
@_spi(Benchmarks) public struct Sequencer: Sendable {
    public enum Outcome: Equatable {
        /// A new entry at the next seq, to be made durable before anyone hears of it.
        case ordered(Entry)
        /// A retry of a submission already ordered (or being ordered).
        case duplicate(seq: UInt64?)
    }

    /// The coordinator's term: a new one begins at every start.
    let epoch: UInt32
    /// The last seq handed out, durable or not.
    private(set) var head: UInt64
    /// The last seq the log holds durably.
    private(set) var durableHead: UInt64
    private(set) var dedup: DedupTable

    public init(epoch: UInt32, durableHead: UInt64, dedup: DedupTable = DedupTable()) {
        self.epoch = epoch
        self.head = durableHead
        self.durableHead = durableHead
        self.dedup = dedup
    }

    /// Orders one submission.
    ///
    /// - Parameters:
    ///   - submission: What the node asked for.
    ///   - origin: The submitting node.
    ///   - session: The submitting process's session.
    ///   - now: Microseconds since the Unix epoch, stamped on the entry.
    public mutating func order(_ submission: Submission, origin: UInt32, session: UInt64, now: UInt64) -> Outcome {
        let key = DedupTable.SessionKey(origin: origin, session: session)
        if case .duplicate(let seq) = dedup.lookup(key, submission: submission.submission) {
            return .duplicate(seq: seq)
        }
        head += 1
        dedup.record(key, submission: submission.submission, seq: head)
        return .ordered(
            Entry(
                seq: head,
                epoch: epoch,
                kind: submission.kind,
                codec: submission.codec,
                origin: origin,
                session: session,
                submission: submission.submission,
                submittedAt: submission.submittedAt,
                committedAt: now,
                address: submission.address,
                payload: submission.payload
            )
        )
    }

    /// The log made everything through `seq` durable.
    public mutating func committed(through seq: UInt64) {
        precondition(seq <= head, "committed \(seq) beyond the head \(head)")
        durableHead = max(durableHead, seq)
    }

    /// The log failed to make the entries above ``durableHead`` durable: they never happened.
    ///
    /// - Returns: The number of entries rolled back.
    @discardableResult
    mutating func rollBack() -> UInt64 {
        let count = head - durableHead
        dedup.forget(above: durableHead)
        head = durableHead
        return count
    }

    /// Re-learns a durable entry while recovering from the log, so retries of it stay duplicates.
    mutating func recover(_ entry: Entry) {
        dedup.record(
            DedupTable.SessionKey(origin: entry.origin, session: entry.session),
            submission: entry.submission,
            seq: entry.seq
        )
    }
}
