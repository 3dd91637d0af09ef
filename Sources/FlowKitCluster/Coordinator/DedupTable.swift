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
struct DedupTable {
    struct SessionKey: Hashable {
        var origin: UInt32
        var session: UInt64
    }

    private struct SessionWindow {
        /// Every submission up to here has been seen.
        var watermark: UInt64 = 0
        /// Recent submissions above or near the watermark, and their seqs.
        var recent: [UInt64: UInt64] = [:]
        /// When the session was last used, in table ticks, for eviction.
        var lastUsed: UInt64 = 0
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

    init(window: Int = 65_536, maxSessions: Int = 4_096) {
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
        var session = sessions[key, default: SessionWindow()]
        session.lastUsed = tick
        session.recent[submission] = seq
        while session.recent[session.watermark + 1] != nil { session.watermark += 1 }
        if session.recent.count > window * 2 { trim(&session) }
        sessions[key] = session
    }

    /// Forgets submissions recorded at seqs above `seq`: an order that was rolled back because the
    /// log could not make it durable.
    mutating func forget(above seq: UInt64) {
        for key in Array(sessions.keys) {
            var session = sessions[key]!
            let forgotten = session.recent.filter { $0.value > seq }.keys
            guard let lowest = forgotten.min() else { continue }
            for submission in forgotten { session.recent[submission] = nil }
            // The watermark may have passed the forgotten submissions: pull it back below them.
            session.watermark = min(session.watermark, lowest - 1)
            sessions[key] = session
        }
    }

    /// Keeps the newest `window` submissions, moving the watermark past the ones dropped.
    private func trim(_ session: inout SessionWindow) {
        let sorted = session.recent.keys.sorted()
        let drop = sorted.prefix(sorted.count - window)
        if let last = drop.last { session.watermark = max(session.watermark, last) }
        for submission in drop { session.recent[submission] = nil }
    }

    private mutating func evictOldestSession() {
        guard let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else { return }
        sessions[oldest] = nil
    }
}
