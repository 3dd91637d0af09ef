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
        /// A retry of a submission already ordered (or being ordered): its seq and the epoch that
        /// ordered it, when still remembered.
        case duplicate(seq: UInt64?, epoch: UInt32?)
    }

    /// The coordinator's term: a single coordinator begins one at every start; replicated
    /// coordinators at every change of leader.
    let epoch: UInt32
    /// The last seq handed out, durable or not.
    private(set) var head: UInt64
    /// The last seq the log holds durably.
    private(set) var durableHead: UInt64
    private(set) var dedup: DedupTable
    /// Where each earlier epoch began, as the log keeps it, so a duplicate is acknowledged with the
    /// epoch that ordered it, not the current one.
    private let history: EpochHistory
    /// The first seq this epoch orders: everything from here on is the current epoch's.
    private let firstSeqOfEpoch: UInt64

    public init(epoch: UInt32, durableHead: UInt64, dedup: DedupTable = DedupTable()) {
        self.init(epoch: epoch, durableHead: durableHead, dedup: dedup, history: EpochHistory())
    }

    /// - Parameter history: The epochs of the log's entries (``EntryLog/epochs``).
    init(epoch: UInt32, durableHead: UInt64, dedup: DedupTable = DedupTable(), history: EpochHistory) {
        self.history = history
        self.epoch = epoch
        self.head = durableHead
        self.durableHead = durableHead
        self.dedup = dedup
        self.firstSeqOfEpoch = durableHead + 1
    }

    /// The epoch that ordered `seq`, if known.
    func epoch(of seq: UInt64) -> UInt32? {
        seq >= firstSeqOfEpoch ? epoch : history.epoch(of: seq)
    }

    /// The epochs of the durable log, this one's entries included.
    var epochs: EpochHistory { epochs(through: durableHead) }

    /// The epochs of the log up to `end`: the durable log, or what was handed to it (a
    /// replicated leader sends a group while it syncs it).
    func epochs(through end: UInt64) -> EpochHistory {
        var epochs = history
        if end >= firstSeqOfEpoch { epochs.note(seq: firstSeqOfEpoch, epoch: epoch) }
        return epochs
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
            return .duplicate(seq: seq, epoch: seq.flatMap(epoch(of:)))
        }
        head += 1
        dedup.record(key, submission: submission.submission, seq: head)
        return .ordered(
            Entry(
                seq: head,
                epoch: epoch,
                kind: submission.kind,
                codec: submission.codec,
                version: submission.kind == .event ? submission.version : 0,
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

    /// Orders a takeover of `address`'s effects (``EntryKind/takeover``): an entry of the
    /// coordinator's own, with origin, session and submission 0, which no retry can duplicate.
    mutating func orderTakeover(_ takeover: Takeover, of address: String, now: UInt64) -> Entry {
        head += 1
        return Entry(
            seq: head, epoch: epoch, kind: .takeover, codec: .binary, version: 0, origin: 0, session: 0, submission: 0, submittedAt: now,
            committedAt: now, address: address, payload: takeover.payload
        )
    }

    /// The highest seq ordered for a node process's submissions, while the duplicate table
    /// remembers its session.
    func lastSeq(of owner: EffectOwner) -> UInt64? {
        dedup.lastSeq(of: DedupTable.SessionKey(origin: owner.node, session: owner.session))
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
        dedup.note(entry)
    }
}
