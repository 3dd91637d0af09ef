import DequeModule

/// Remembers which submissions each session has had ordered, so a retry is recognised and not
/// ordered twice.
///
/// Per session (origin node + session id) it keeps a watermark below which every submission is
/// known, and the seqs of the most recent `window` submissions. A retry of a remembered submission
/// is answered with its original seq; a retry older than the window is still recognised as a
/// duplicate (by the watermark), but its seq is no longer known. Submissions normally arrive in
/// order; if one is missing while `window` newer ones arrive, the watermark moves past it and a late
/// retry of it is treated as a duplicate. That is the documented window: a node retries a
/// submission long before `window` newer ones of its own session have been ordered.
///
/// Sessions idle the longest are forgotten beyond `maxSessions`.
@_spi(Benchmarks) public struct DedupTable: Sendable {
    struct SessionKey: Hashable {
        var origin: UInt32
        var session: UInt64
    }

    private struct SessionWindow {
        /// Every submission up to here has been seen.
        var watermark: UInt64 = 0
        /// Recent submissions and their seqs.
        var recent: [UInt64: UInt64] = [:]
        /// `recent`'s keys in the order they were recorded, oldest first, for eviction.
        var arrivals = Deque<UInt64>()
        /// When the session was last used, in table ticks, for eviction.
        var lastUsed: UInt64 = 0

        mutating func record(_ submission: UInt64, seq: UInt64, window: Int) {
            if recent.updateValue(seq, forKey: submission) == nil { arrivals.append(submission) }
            while recent[watermark + 1] != nil { watermark += 1 }
            while arrivals.count > window {
                // The oldest goes; if a gap below it is still open, the watermark moves past the
                // gap: a retry that late is taken for a duplicate (the documented window).
                let evicted = arrivals.removeFirst()
                recent[evicted] = nil
                watermark = max(watermark, evicted)
            }
        }
    }

    enum Lookup: Equatable {
        case new
        /// Already ordered; the seq, if still remembered.
        case duplicate(seq: UInt64?)
    }

    let window: Int
    let maxSessions: Int
    private var sessions: [SessionKey: SessionWindow] = [:]
    private var tick: UInt64 = 0

    public init(window: Int = 65_536, maxSessions: Int = 4_096) {
        precondition(window > 0 && maxSessions > 0)
        self.window = window
        self.maxSessions = maxSessions
    }

    var sessionCount: Int { sessions.count }

    func lookup(_ key: SessionKey, submission: UInt64) -> Lookup {
        guard let session = sessions[key] else { return .new }
        if let seq = session.recent[submission] { return .duplicate(seq: seq) }
        if submission <= session.watermark { return .duplicate(seq: nil) }
        return .new
    }

    /// Records that `submission` of `key` was ordered at `seq`.
    mutating func record(_ key: SessionKey, submission: UInt64, seq: UInt64) {
        tick += 1
        if sessions[key] == nil, sessions.count >= maxSessions { evictOldestSession() }
        // Mutated in place: copying a session out and back would copy its whole window each time.
        sessions[key, default: SessionWindow()].record(submission, seq: seq, window: window)
        sessions[key]!.lastUsed = tick
    }

    /// Forgets submissions recorded at seqs above `seq`: an order that was rolled back because the
    /// log could not make it durable.
    mutating func forget(above seq: UInt64) {
        for key in Array(sessions.keys) {
            var session = sessions[key]!
            let forgotten = session.recent.filter { $0.value > seq }.keys
            guard let lowest = forgotten.min() else { continue }
            for submission in forgotten { session.recent[submission] = nil }
            session.arrivals.removeAll { session.recent[$0] == nil }
            // The watermark may have passed the forgotten submissions: pull it back below them.
            session.watermark = min(session.watermark, lowest - 1)
            sessions[key] = session
        }
    }

    private mutating func evictOldestSession() {
        guard let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else { return }
        sessions[oldest] = nil
    }
}
