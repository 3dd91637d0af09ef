#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// A crash-safe, checksummed, append-only log of ``LogRecord``s with contiguous seqs, stored
/// as segment files in one directory. The on-disk format is described in `LogFormat.swift`.
///
/// Writes are group-committed: ``append(_:)`` buffers records, ``commit()`` makes all of them
/// durable at once (per ``Durability``) and only then are they readable and safe to
/// acknowledge. Opening the log recovers it: every record is validated, a torn or damaged tail
/// of the last segment is cut off (and logged), and damage anywhere else refuses to open.
/// A failed write or sync (for example `ENOSPC`) rolls the uncommitted batch back, leaving the
/// log exactly as at the last commit, so the same records can be appended again later.
///
/// `SegmentLog` is not `Sendable`: one task, thread or actor owns it and calls it serially.
/// A directory lock (see `DirectoryLock`) stops a second `SegmentLog`, in this or another process, from
/// opening the same directory.
///
/// ```swift
/// let log = try SegmentLog(directory: "/var/lib/flowkit/log", logger: logger)
/// var seq = log.nextSeq ?? 1
/// for payload in batch { try log.append(seq: seq, payload: payload); seq += 1 }
/// let durable = try log.commit()   // acknowledge and publish up to `durable`
/// let missing = try log.read(from: 42, maxCount: 1_000)
/// ```
public final class SegmentLog {
    /// The directory holding the segment files.
    public let directory: String
    /// The options the log was opened with.
    public let options: Options
    /// Counters about commits since the log was opened.
    public internal(set) var statistics = Statistics()

    let logger: Logger
    let fileSystem: FileSystem
    /// Sorted by seq; the last one is the active segment that appends go to.
    var segments: [Segment] = []
    /// Framed records appended to the active segment but not yet handed to the OS.
    var writeBuffer: [UInt8] = []
    /// Scratch space for reads and recovery.
    var readBuffer: [UInt8] = []
    /// The state at the last successful commit, restored by a rollback.
    var committed = Checkpoint(segmentCount: 0, activeSize: 0, lastSeq: nil)
    var pendingRecords = 0
    var pendingBytes = 0
    var state = State.open
    var directoryLock: DirectoryLock?

    struct Checkpoint {
        var segmentCount: Int
        var activeSize: Int
        var lastSeq: UInt64?
    }

    enum State {
        case open
        case failed(LogError)
        case closed
    }

    /// Opens (and recovers) the log in `directory`, creating the directory if it is missing.
    ///
    /// - Parameters:
    ///   - directory: The log's own directory.
    ///   - options: Segment size, durability and test hooks.
    ///   - logger: Receives recovery reports (what was truncated and why) and I/O failures.
    /// - Throws: ``LogError`` with ``LogError/Code/corrupt`` if a record or segment before the
    ///   tail is damaged, ``LogError/Code/locked`` if the directory is in use, or an I/O error.
    public init(directory: String, options: Options = Options(), logger: Logger) throws {
        self.directory = directory
        self.options = options
        self.fileSystem = FileSystem(faults: options.faultInjection)
        var logger = logger
        logger[metadataKey: "flowkit.log.directory"] = "\(directory)"
        self.logger = logger
        writeBuffer.reserveCapacity(min(options.writeBufferBytes, 1 << 20) + 4096)
        try fileSystem.makeDirectory(directory)
        directoryLock = try DirectoryLock(directory: directory)
        try recover()
        committed = Checkpoint(
            segmentCount: segments.count,
            activeSize: segments.last?.size ?? 0,
            lastSeq: segments.last { $0.lastSeq != nil }?.lastSeq
        )
    }

    /// The seq of the oldest record still in the log, or nil if it holds no records.
    public var firstSeq: UInt64? {
        guard let last = committed.lastSeq, let first = segments.first?.firstSeq, first <= last else { return nil }
        return first
    }

    /// The seq of the newest committed (durable, readable) record, or nil if it holds none.
    public var lastSeq: UInt64? { firstSeq == nil ? nil : committed.lastSeq }

    /// The seq the next ``append(_:)`` must carry: one past the last appended record (committed
    /// or not). Nil for a log that has never held a record, whose first append may use any seq.
    public var nextSeq: UInt64? { segments.last?.nextSeq }

    /// Records appended since the last ``commit()``.
    public var pendingCount: Int { pendingRecords }

    /// The number of segment files.
    public var segmentCount: Int { segments.count }

    /// Closes the files and releases the directory lock. Uncommitted records are dropped.
    /// Later calls throw ``LogError/Code/closed``; closing twice does nothing.
    public func close() {
        if case .closed = state { return }
        for segment in segments { segment.close(fileSystem) }
        directoryLock?.release()
        directoryLock = nil
        writeBuffer.removeAll()
        state = .closed
    }

    deinit {
        close()
    }

    func checkOpen() throws {
        switch state {
        case .open: return
        case .closed: throw LogError(.closed, "the log at \(directory) is closed; open a new SegmentLog")
        case .failed(let cause):
            throw LogError(
                .failed,
                "an earlier I/O failure could not be rolled back (\(cause)); close the log and open it again to recover from disk",
                path: cause.path,
                errno: cause.errno
            )
        }
    }

    func segmentPath(firstSeq: UInt64) -> String {
        FileSystem.join(directory, LogFormat.segmentName(firstSeq: firstSeq))
    }
}

@available(*, unavailable)
extension SegmentLog: Sendable {}
