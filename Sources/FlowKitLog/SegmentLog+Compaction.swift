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
        try checkOpen()
        var removed = 0
        // Only segments wholly before the last commit's active segment: those are complete and committed.
        while segments.count > 1, committed.segmentCount > 1 {
            let next = segments[1].firstSeq
            guard next == 0 || next - 1 <= seq else { break }
            let segment = segments[0]
            segment.close(fileSystem)
            try fileSystem.remove(segment.path)
            segments.removeFirst()
            committed.segmentCount -= 1
            removed += 1
        }
        guard removed > 0 else { return 0 }
        if options.durability == .synced { try fileSystem.syncDirectory(directory) }
        logger.info(
            "removed compacted segments",
            metadata: ["flowkit.log.removed": "\(removed)", "flowkit.log.first_seq": "\(segments[0].firstSeq)"]
        )
        return removed
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
