import Foundation
import Synchronization

/// When sampled entries pass each hop inside a process, for `flowkit bench --trace`: the
/// breakdown of one event's time from the load tool through a node, the coordinator, its log and
/// back, and out to every node.
///
/// Off unless configured. An entry is sampled when its seq is a multiple of ``every``, so every
/// process samples the same entries and the load tool joins their records by seq. Records are
/// appended to a JSON-lines file (`{"seq":…,"stage":"…","us":…}`, microseconds since the Unix
/// epoch) after each ``flush()``; at most ``capacity`` are kept between flushes.
///
/// ``flush()`` is called on a process's I/O thread, so it only takes the records; formatting and
/// writing them happen on a queue of the trace's own. Done on the I/O thread (as they once were,
/// with `JSONEncoder`), a second's records at 30,000 events/s held every message for milliseconds
/// once a second, and the trace reported a p99 three times the untraced run's.
@_spi(Wire) public final class HopTrace: Sendable {
    /// The hops a process records, in the order an event meets them.
    public enum Stage: String, Sendable, CaseIterable, Codable {
        /// The origin node read the client's EMIT.
        case nodeReceived = "node.received"
        /// The origin node first sent the SUBMIT carrying it.
        case nodeSubmitted = "node.submitted"
        /// The coordinator read the SUBMIT.
        case coordinatorReceived = "coordinator.received"
        /// The coordinator gave it its seq.
        case coordinatorOrdered = "coordinator.ordered"
        /// The commit that made it durable began (append and sync).
        case coordinatorCommitStarted = "coordinator.commitStarted"
        /// That commit ended: durable.
        case coordinatorCommitted = "coordinator.committed"
        /// Its ACK was handed to the submit socket.
        case coordinatorAcknowledged = "coordinator.acknowledged"
        /// Its ENTRIES message was handed to the publish socket.
        case coordinatorPublished = "coordinator.published"
        /// The origin node learnt its seq: from the ACK, or from the ENTRIES that carried it,
        /// whichever came first.
        case nodeAcknowledged = "node.acknowledged"
        /// The origin node handed its EMITTED to the client socket.
        case nodeAnswered = "node.answered"
        /// The client socket handed that EMITTED to its engine (which writes it to the connection).
        case nodeAnswerSent = "node.answerSent"
        /// A node read the ENTRIES message that carried it.
        case nodeEntriesReceived = "node.entriesReceived"
        /// A node applied it.
        case nodeApplied = "node.applied"
        /// A node handed the PROGRESS covering it to the client socket.
        case nodeProgressSent = "node.progressSent"
        /// Replicated coordinators: the leader handed a FETCHED carrying it to its sync socket
        /// (once for each standby).
        case leaderFetchedSent = "leader.fetchedSent"
        /// A standby read the FETCHED carrying it.
        case standbyReceived = "standby.received"
        /// A standby's log made it durable.
        case standbyDurable = "standby.durable"
        /// The leader read a standby's FETCH saying that it holds it durably (once for each).
        case leaderConfirmed = "leader.confirmed"
    }

    private struct Record {
        var seq: UInt64
        var stage: Stage
        var us: UInt64
    }

    /// One entry in every `every` is sampled (by seq).
    public let every: UInt64
    /// Where the records go.
    public let path: String
    /// The most records held between flushes; beyond it, records are dropped (and counted).
    public let capacity = 200_000
    private let records = Mutex<(pending: [Record], dropped: Int)>(([], 0))
    /// Formats and appends flushed records, one flush after another, off the caller's thread.
    private let writer = DispatchQueue(label: "flowkit.hop-trace", qos: .utility)

    /// - Parameters:
    ///   - every: Sample entries whose seq is a multiple of this (at least 1).
    ///   - path: The JSON-lines file records are appended to; created if missing.
    public init(every: UInt64, path: String) {
        precondition(every >= 1)
        self.every = every
        self.path = path
    }

    @inline(__always)
    func samples(_ seq: UInt64) -> Bool { seq % every == 0 }

    /// The sampled seqs in `range`, without looking at every seq in it.
    func sampled(in range: ClosedRange<UInt64>) -> StrideThrough<UInt64> {
        let first = (range.lowerBound + every - 1) / every * every
        return stride(from: max(first, every), through: range.upperBound, by: Int(every))
    }

    /// Notes that the sampled ones among entry records reached `stage` at `micros`.
    func note(records: [[UInt8]], _ stage: Stage, at micros: UInt64) {
        for record in records {
            if let seq = Entry.peekSeq(record), samples(seq) { note(seq, stage, at: micros) }
        }
    }

    /// Notes that sampled entry `seq` reached `stage` at `micros`.
    func note(_ seq: UInt64, _ stage: Stage, at micros: UInt64) {
        records.withLock { records in
            guard records.pending.count < capacity else {
                records.dropped += 1
                return
            }
            records.pending.append(Record(seq: seq, stage: stage, us: micros))
        }
    }

    /// Hands what was noted since the last flush to the trace's queue, which appends it to the file.
    public func flush() {
        let pending = records.withLock { records in
            defer { records.pending = [] }
            return records.pending
        }
        guard !pending.isEmpty else { return }
        let path = path
        writer.async { Self.append(pending, to: path) }
    }

    /// Waits until every flush so far has reached the file.
    public func drain() {
        writer.sync {}
    }

    /// One record of a trace file: a line of JSON.
    public struct Line: Codable, Sendable {
        public var seq: UInt64
        public var stage: String
        public var us: UInt64

        public init(seq: UInt64, stage: String, us: UInt64) {
            (self.seq, self.stage, self.us) = (seq, stage, us)
        }
    }

    /// Records as a trace file holds them: a line of JSON each.
    public static func jsonLines(_ lines: [Line]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return lines.compactMap { line in (try? encoder.encode(line)).map { String(decoding: $0, as: UTF8.self) + "\n" } }.joined()
    }

    private static func append(_ records: [Record], to path: String) {
        let text = jsonLines(records.map { Line(seq: $0.seq, stage: $0.stage.rawValue, us: $0.us) })
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forWritingAtPath: path) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data(text.utf8))
    }
}
