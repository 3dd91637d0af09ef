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

    /// One session's recent submissions, in a ring indexed by submission id: a session's ids come
    /// one after another, so recording and looking one up touch a slot or two next to the last
    /// ones, where a dictionary of the window's 65,536 ids hashed each into a table of megabytes
    /// (and a queue kept their order): 5 % of the coordinator's loop at 30,000 events/s.
    private struct SessionWindow {
        /// Every submission up to here has been seen.
        var watermark: UInt64 = 0
        /// `slots[id & (slots.count - 1)]` holds submission `id` and its seq, or another id that
        /// shares the slot, or nothing (id 0: ids start at 1). A power of two long, doubled while
        /// the window needs room, up to the window rounded up.
        private var slots: [(id: UInt64, seq: UInt64)] = Array(repeating: (0, 0), count: 16)
        /// When the session was last used, in table ticks, for eviction.
        var lastUsed: UInt64 = 0
        /// The highest seq ordered for the session.
        var lastSeq: UInt64 = 0

        private func slot(_ id: UInt64) -> Int { Int(id & UInt64(slots.count - 1)) }

        mutating func raise(watermark: UInt64, lastSeq: UInt64, tick: UInt64) {
            self.watermark = max(self.watermark, watermark)
            self.lastSeq = max(self.lastSeq, lastSeq)
            lastUsed = tick
            while orderedSeq(of: self.watermark + 1) != nil { self.watermark += 1 }
        }

        /// The seq `submission` was ordered at, if it is still remembered.
        func orderedSeq(of submission: UInt64) -> UInt64? {
            let entry = slots[slot(submission)]
            return submission != 0 && entry.id == submission ? entry.seq : nil
        }

        mutating func record(_ submission: UInt64, seq: UInt64, window: Int, tick: UInt64) {
            lastUsed = tick
            lastSeq = max(lastSeq, seq)
            var index = slot(submission)
            // Another id within the window shares the slot: make room rather than forget it.
            while slots[index].id != 0, slots[index].id != submission, slots.count < window,
                max(slots[index].id, submission) - min(slots[index].id, submission) < UInt64(window)
            {
                grow()
                index = slot(submission)
            }
            let occupant = slots[index].id
            if occupant == submission {
                // Known already (a coordinator that starts from a snapshot's sessions reads the
                // entries it retains again): nothing moves. Taking it for an older occupant moved
                // the watermark past submissions never ordered, and their retries were lost.
                slots[index].seq = seq
                return
            }
            if occupant < submission {
                // The oldest goes; if a gap below it is still open, the watermark moves past the
                // gap: a retry that late is taken for a duplicate (the documented window).
                if occupant != 0 { watermark = max(watermark, occupant) }
                slots[index] = (submission, seq)
            } else {
                // A newer id holds the slot: this one is older than the window, and its retries
                // are duplicates by the watermark.
                watermark = max(watermark, submission)
            }
            while orderedSeq(of: watermark + 1) != nil { watermark += 1 }
        }

        private mutating func grow() {
            var grown = Array(repeating: (id: UInt64(0), seq: UInt64(0)), count: slots.count * 2)
            for entry in slots where entry.id != 0 { grown[Int(entry.id & UInt64(grown.count - 1))] = entry }
            slots = grown
        }

        /// The ids above the watermark it remembers, with their seqs, by id.
        var above: [(id: UInt64, seq: UInt64)] {
            slots.filter { $0.id > watermark }.sorted { $0.id < $1.id }
        }

        /// Forgets submissions ordered at seqs above `seq`; returns the lowest forgotten id.
        mutating func forget(above seq: UInt64) -> UInt64? {
            var lowest: UInt64?
            for index in slots.indices where slots[index].id != 0 && slots[index].seq > seq {
                lowest = min(lowest ?? .max, slots[index].id)
                slots[index] = (0, 0)
            }
            lastSeq = min(lastSeq, seq)
            return lowest
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
        if let seq = session.orderedSeq(of: submission) { return .duplicate(seq: seq) }
        if submission <= session.watermark { return .duplicate(seq: nil) }
        return .new
    }

    /// The highest seq ordered for a session, if the table still remembers the session.
    func lastSeq(of key: SessionKey) -> UInt64? {
        sessions[key]?.lastSeq
    }

    /// Records that `submission` of `key` was ordered at `seq`.
    mutating func record(_ key: SessionKey, submission: UInt64, seq: UInt64) {
        tick += 1
        if sessions[key] == nil, sessions.count >= maxSessions { evictOldestSession() }
        // Mutated in place: copying a session out and back would copy its whole window each time.
        sessions[key, default: SessionWindow()].record(submission, seq: seq, window: window, tick: tick)
    }

    /// Forgets submissions recorded at seqs above `seq`: an order that was rolled back because the
    /// log could not make it durable.
    mutating func forget(above seq: UInt64) {
        for key in Array(sessions.keys) {
            guard let lowest = sessions[key]!.forget(above: seq) else { continue }
            // The watermark may have passed the forgotten submissions: pull it back below them.
            sessions[key]!.watermark = min(sessions[key]!.watermark, lowest - 1)
        }
    }

    /// Records an entry of the log (a takeover is the coordinator's own: nothing to duplicate).
    mutating func note(_ entry: Entry) {
        guard entry.kind != .takeover else { return }
        record(SessionKey(origin: entry.origin, session: entry.session), submission: entry.submission, seq: entry.seq)
    }

    /// What a snapshot keeps of one session: every submission up to `watermark` was ordered, and
    /// those above it in `above`; the highest seq ordered for it.
    struct Remembered: Equatable, Sendable {
        var origin: UInt32
        var session: UInt64
        var watermark: UInt64
        var lastSeq: UInt64
        var above: [Submitted]

        struct Submitted: Equatable, Sendable {
            var id: UInt64
            var seq: UInt64
        }
    }

    /// Every session, in key order, as a snapshot keeps it: a coordinator that starts from the
    /// snapshot still knows what was ordered before it (the log it retains may not say). The seqs
    /// of submissions below a watermark are not kept: a retry of one is a duplicate whose seq is
    /// no longer known, as past the window.
    func remembered() -> [Remembered] {
        sessions.map { key, window in
            Remembered(
                origin: key.origin, session: key.session, watermark: window.watermark, lastSeq: window.lastSeq,
                above: window.above.map { Remembered.Submitted(id: $0.id, seq: $0.seq) }
            )
        }
        .sorted { ($0.origin, $0.session) < ($1.origin, $1.session) }
    }

    /// Takes in what a snapshot remembered of each session, with what the table knows already.
    mutating func restore(_ remembered: [Remembered]) {
        for session in remembered {
            let key = SessionKey(origin: session.origin, session: session.session)
            for submitted in session.above { record(key, submission: submitted.id, seq: submitted.seq) }
            tick += 1
            if sessions[key] == nil, sessions.count >= maxSessions { evictOldestSession() }
            sessions[key, default: SessionWindow()].raise(watermark: session.watermark, lastSeq: session.lastSeq, tick: tick)
        }
    }

    private mutating func evictOldestSession() {
        guard let oldest = sessions.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else { return }
        sessions[oldest] = nil
    }
}
