import Synchronization

/// The leader's most recent durable entry records, in memory, for its sync socket: a FETCH whose
/// end lies among them is checked and answered here (held, the moment a group is durable) without
/// a turn through the ordering core, which is busy syncing the next group, or a read of the log.
/// How far each standby's log is durable goes on to the core as a report, the latest of each.
///
/// The leading core appends each group once its log holds it durably, and notes its commit point;
/// the sync server reads. A term of its own: a FETCH of another epoch is not answered from here.
final class ReplicationFeed: Sendable {
    /// What the feed holds for a FETCH.
    enum Read: Equatable {
        /// Records from the seq asked for, and the leader's commit point.
        case records([[UInt8]], committed: UInt64)
        /// Nothing after it yet.
        case nothingYet(committed: UInt64)
        /// Not here: another term, or older than the feed keeps.
        case unavailable
    }

    private struct State {
        var epoch: UInt32 = 0
        var window: RecordWindow
        var committed: UInt64 = 0
        /// Standbys' durable ends not yet handed to the core.
        var reports: [String: UInt64] = [:]
    }

    private let state: Mutex<State>
    /// The most record bytes kept; the oldest go first.
    let maxBytes: Int

    init(maxBytes: Int = 8 << 20) {
        self.maxBytes = maxBytes
        state = Mutex(State(window: RecordWindow(maxBytes: maxBytes)))
    }

    /// A core starts leading in `epoch`; its log ends at `written`, committed up to `committed`.
    func lead(epoch: UInt32, written: UInt64, committed: UInt64) {
        state.withLock { state in
            state = State(epoch: epoch, window: RecordWindow(maxBytes: maxBytes, firstSeq: written + 1), committed: committed)
        }
    }

    /// The core stopped leading: nothing is answered from here until the next term.
    func stop() {
        state.withLock { $0 = State(window: RecordWindow(maxBytes: maxBytes)) }
    }

    /// The leader's log holds these records durably, from `firstSeq` on.
    func append(_ records: [[UInt8]], from firstSeq: UInt64) {
        state.withLock { state in
            guard state.epoch != 0 else { return }
            state.window.append(records, from: firstSeq)
        }
    }

    /// The leader's commit point moved to `seq`.
    func noteCommitted(_ seq: UInt64) {
        state.withLock { $0.committed = max($0.committed, seq) }
    }

    /// Whether the leader's log of `epoch` holds an entry of `endEpoch` at `end`, so a standby's
    /// log that ends there agrees with it; `false` when the feed cannot tell (not among its records).
    func agrees(end: UInt64, endEpoch: UInt32, epoch: UInt32) -> Bool {
        state.withLock { state in
            guard epoch != 0, epoch == state.epoch, let record = state.window.record(at: end) else { return false }
            return Entry.peekEpoch(record) == endEpoch
        }
    }

    /// Standby `id` holds the log durably up to `durable`; returns whether the core must be told
    /// (no report was waiting).
    func report(_ id: String, durable: UInt64) -> Bool {
        state.withLock { state in
            let first = state.reports.isEmpty
            state.reports[id] = max(state.reports[id] ?? 0, durable)
            return first
        }
    }

    /// The reports waiting, for the core.
    func takeReports() -> [String: UInt64] {
        state.withLock { state in
            defer { state.reports = [:] }
            return state.reports
        }
    }

    /// The records from `seq` on (at most `maxBytes` of them, and at least one), for a FETCH of `epoch`.
    func read(from seq: UInt64, epoch: UInt32, maxBytes: Int) -> Read {
        state.withLock { state in
            guard epoch != 0, epoch == state.epoch, seq >= state.window.firstSeq else { return .unavailable }
            if let records = state.window.read(from: seq, maxCount: .max, maxBytes: maxBytes) {
                return .records(records, committed: state.committed)
            }
            return seq == state.window.lastSeq + 1 ? .nothingYet(committed: state.committed) : .unavailable
        }
    }
}
