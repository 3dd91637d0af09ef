import Logging

extension SegmentLog {
    /// Deletes whole segment files whose records are all at or before `seq`.
    ///
    /// Call it once a durable snapshot covers `seq`. A segment is never cut in the middle and
    /// the last segment is always kept, so the log remembers its position across restarts;
    /// reads below the new ``firstSeq`` throw ``LogError/Code/compacted``. Segments go oldest
    /// first, so a crash part-way leaves a valid, shorter log.
    /// - Parameter seq: The newest seq that may be dropped.
    /// - Returns: The number of segment files deleted.
    @discardableResult
    public func removePrefix(through seq: UInt64) throws -> Int {
        let detached = try detachPrefix(through: seq)
        try detached.delete()
        return detached.count
    }

    /// Takes the segments ``removePrefix(through:)`` would delete out of the log, and leaves
    /// deleting their files to the caller, on another thread: unlinking a 64 MiB segment took
    /// 19 ms on this project's machine, and a coordinator that did it on its log's thread held
    /// every commit meanwhile, once per snapshot (the p99 of the second it happened in rose to
    /// 270 ms). The log no longer reads them at once; a crash before they are deleted leaves a
    /// valid, longer log, which the next compaction shortens again.
    /// - Parameter seq: The newest seq that may be dropped.
    public func detachPrefix(through seq: UInt64) throws -> DetachedSegments {
        try checkOpen()
        var paths: [String] = []
        // Only segments wholly before the last commit's active segment: those are complete and committed.
        while segments.count > 1, committed.segmentCount > 1 {
            let next = segments[1].firstSeq
            guard next == 0 || next - 1 <= seq else { break }
            let segment = segments[0]
            segment.close(fileSystem)
            paths.append(segment.path)
            segments.removeFirst()
            committed.segmentCount -= 1
        }
        guard !paths.isEmpty else { return DetachedSegments() }
        logger.info(
            "removed compacted segments",
            metadata: ["flowkit.log.removed": "\(paths.count)", "flowkit.log.first_seq": "\(segments[0].firstSeq)"]
        )
        return DetachedSegments(paths: paths, directory: directory, fileSystem: fileSystem, synced: options.durability == .synced)
    }

    /// Drops every record and makes `nextSeq` the seq of the next append, durably.
    ///
    /// For a replica that replaces its history with a snapshot at `nextSeq - 1`. Seqs are never
    /// reused: `nextSeq` may not be below the current ``nextSeq``. An empty segment starting at
    /// `nextSeq` is created and synced before the old segments are deleted; if a crash
    /// interrupts the deletion, opening the log completes it.
    /// - Parameter nextSeq: The seq the next append must carry.
    /// - Throws: ``LogError/Code/invalidArgument`` if records are pending or `nextSeq` would
    ///   move backwards; an I/O error if the new segment could not be created.
    public func reset(nextSeq newNext: UInt64) throws {
        try checkOpen()
        guard pendingRecords == 0 else {
            throw LogError(.invalidArgument, "reset with \(pendingRecords) uncommitted records; commit them first")
        }
        if let current = nextSeq, newNext < current {
            throw LogError(.invalidArgument, "reset to seq \(newNext) would move the log back from \(current); seqs are never reused")
        }
        if let active = segments.last, active.lastSeq == nil, active.firstSeq == newNext {
            // Already an empty log at this position; only older segments may remain.
        } else {
            do {
                try createSegment(firstSeq: newNext)
            } catch {
                rollBack(after: error)
                throw error
            }
        }
        committed = Checkpoint(segmentCount: segments.count, activeSize: segments[segments.count - 1].size, lastSeq: nil)
        while segments.count > 1 {
            let segment = segments[0]
            segment.close(fileSystem)
            try fileSystem.remove(segment.path)
            segments.removeFirst()
            committed.segmentCount -= 1
        }
        try fileSystem.syncDirectory(directory)
        logger.info("reset the log", metadata: ["flowkit.log.next_seq": "\(newNext)"])
    }
}

extension SegmentLog {
    /// Drops every record after `seq`, durably.
    ///
    /// For a follower whose log holds entries its leader's does not: written by a leader that was
    /// deposed before they were committed, so nobody was told of them. Later segments are deleted
    /// first, newest first, then the segment holding `seq + 1` is cut before it and synced: a crash
    /// part-way leaves a valid log that ends somewhere between `seq` and the old end.
    /// - Throws: ``LogError/Code/invalidArgument`` if records are pending, or if `seq` is before the
    ///   log's first record less one (compaction removed what would be kept).
    public func removeSuffix(after seq: UInt64) throws {
        try checkOpen()
        guard pendingRecords == 0 else {
            throw LogError(.invalidArgument, "cutting the log with \(pendingRecords) uncommitted records; commit them first")
        }
        guard let last = committed.lastSeq, seq < last, let first = segments.first?.firstSeq else { return }
        guard seq + 1 >= first else {
            throw LogError(.invalidArgument, "cannot keep the log up to seq \(seq): compaction removed everything before \(first)")
        }
        let index = segmentIndex(containing: seq + 1)
        while segments.count > index + 1 {
            let segment = segments.removeLast()
            segment.close(fileSystem)
            try fileSystem.remove(segment.path)
        }
        let segment = segments[index]
        let cut = try offset(of: seq + 1, in: segment)
        let fd = try segment.descriptor(fileSystem)
        try fileSystem.truncate(fd, to: cut, path: segment.path)
        try fileSystem.sync(fd, path: segment.path)
        try fileSystem.syncDirectory(directory)
        segment.size = cut
        segment.forget(after: seq)
        segment.needsSync = false
        committed = Checkpoint(segmentCount: segments.count, activeSize: cut, lastSeq: seq >= first ? seq : nil)
        logger.notice("cut the log's uncommitted tail", metadata: ["flowkit.log.kept_through": "\(seq)", "flowkit.log.dropped": "\(last - seq)"])
    }

    /// The file offset of record `seq` in `segment`.
    private func offset(of seq: UInt64, in segment: Segment) throws -> Int {
        var scanner = RecordScanner(
            fd: try segment.descriptor(fileSystem),
            path: segment.path,
            from: segment.offset(scanningFor: seq),
            end: segment.size,
            chunkSize: 64 << 10,
            fileSystem: fileSystem
        )
        while true {
            switch try scanner.next(buffer: &readBuffer) {
            case .record(let record) where record.seq == seq:
                return record.offset
            case .record(let record) where record.seq < seq:
                continue
            case .record(let record):
                throw LogError(.corrupt, "seq \(record.seq) where \(seq) was expected", path: segment.path)
            case .damaged(let offset, let reason):
                throw LogError(.corrupt, "record at offset \(offset) failed validation (\(reason))", path: segment.path)
            case .end:
                throw LogError(.corrupt, "seq \(seq) is not in its segment", path: segment.path)
            }
        }
    }
}

/// Segment files taken out of a log (``SegmentLog/detachPrefix(through:)``), to delete on any
/// thread: oldest first, then the directory synced (in a synced log), so that a crash part-way
/// leaves the log valid.
public struct DetachedSegments: Sendable {
    let paths: [String]
    let directory: String
    let fileSystem: FileSystem?
    let synced: Bool

    /// None.
    public init() {
        self.init(paths: [], directory: "", fileSystem: nil, synced: false)
    }

    init(paths: [String], directory: String, fileSystem: FileSystem?, synced: Bool) {
        self.paths = paths
        self.directory = directory
        self.fileSystem = fileSystem
        self.synced = synced
    }

    /// How many segment files.
    public var count: Int { paths.count }

    /// Deletes them.
    public func delete() throws {
        guard let fileSystem, !paths.isEmpty else { return }
        for path in paths { try fileSystem.remove(path) }
        if synced { try fileSystem.syncDirectory(directory) }
    }
}
