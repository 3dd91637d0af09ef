import Dispatch

/// Serialises access to the coordinator's log: reads (ranges, compaction) run on a thread of their
/// own, so disk reads never block Swift's cooperative pool; commits run on the caller's thread
/// (``runHere(_:)``). Jobs run one at a time, in submission order.
final class LogWriter: Sendable {
    /// The log, touched only from `queue`: that confinement is what makes sharing it safe.
    private final class Confined: @unchecked Sendable {
        let log: any EntryLog
        init(_ log: any EntryLog) { self.log = log }
    }

    private let queue = DispatchQueue(label: "flowkit.coordinator.log")
    private let confined: Confined
    /// The log's newest records, read from any thread with no job on the log's.
    let recent: RecentEntryRecords

    init(log: any EntryLog) {
        self.confined = Confined(log)
        self.recent = log.recent
    }

    /// Runs `body` with the log on the calling thread, after any job queued before it and before
    /// any queued after: the commit path, which must not pay two thread switches per commit.
    func runHere<Value>(_ body: (any EntryLog) throws -> Value) throws -> Value {
        try queue.sync { try body(confined.log) }
    }

    /// Runs `body` with the log on the log thread and returns its result.
    func run<Value: Sendable>(_ body: @escaping @Sendable (any EntryLog) throws -> Value) async throws -> Value {
        let confined = self.confined
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(confined.log) })
            }
        }
    }
}
