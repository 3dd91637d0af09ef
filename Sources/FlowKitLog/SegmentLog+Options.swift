extension SegmentLog {
    /// How much a ``SegmentLog/commit()`` guarantees.
    public enum Durability: Sendable, Hashable {
        /// `commit()` writes the batch and `fdatasync`s every segment it touched; creating or
        /// removing a segment file also `fsync`s the directory. A committed record survives a
        /// process crash (`kill -9`) and power loss or a kernel crash.
        case synced
        /// `commit()` hands the batch to the OS with `pwrite` but does not sync. A committed
        /// record survives a process crash (`kill -9`: the kernel still writes the page cache
        /// out), but power loss or a kernel crash can lose the last seconds of commits; recovery
        /// then truncates the torn tail. Segments are still synced when sealed, so only the last
        /// segment can lose records.
        case relaxed
    }

    /// Tuning and durability for a ``SegmentLog``.
    public struct Options: Sendable {
        /// A new segment file is started when the next record would grow the current one past
        /// this many bytes (a single larger record still gets a segment of its own).
        public var segmentBytes: Int
        /// What ``SegmentLog/commit()`` guarantees.
        public var durability: Durability
        /// Distance in bytes between sparse index entries: a read scans at most this far.
        public var indexIntervalBytes: Int
        /// Appended records are handed to the OS once this many bytes are buffered, so large
        /// batches do not grow memory; they become durable only at ``SegmentLog/commit()``.
        public var writeBufferBytes: Int
        /// Reserve each new segment's `segmentBytes` when it is created (`posix_fallocate`), so
        /// appends never grow the file and `fdatasync` has no file size to write: on ext4 that
        /// took a third off every sync's CPU and latency. A synced log also writes zeros a little
        /// ahead of its records, so that commits land in space already written (see
        /// `flushWriteBuffer`). The unused tail reads as zeros and is cut when the segment is
        /// sealed.
        public var preallocate: Bool
        /// A test hook that makes chosen file operations fail (disk full, I/O error).
        public var faultInjection: FaultInjection?
        /// The format of the payloads this log writes, the log's user's to number: every segment
        /// records the format of its records, and ``SegmentLog/read(from:maxCount:maxBytes:)``
        /// returns it with each record, so a user whose payload layout changes reads what an older
        /// build wrote. Segments written before it was recorded read as 0.
        public var payloadFormat: UInt32 = 0

        /// Creates options.
        /// - Parameters:
        ///   - segmentBytes: Roll to a new segment past this size; default 64 MiB.
        ///   - durability: What a commit guarantees; default ``Durability/synced``.
        ///   - indexIntervalBytes: Sparse index spacing; default 4 KiB.
        ///   - writeBufferBytes: Hand buffered records to the OS past this size; default 1 MiB.
        ///   - preallocate: Reserve each segment's space when it is created; default on.
        ///   - faultInjection: A hook for tests; default none.
        public init(
            segmentBytes: Int = 64 << 20,
            durability: Durability = .synced,
            indexIntervalBytes: Int = 4096,
            writeBufferBytes: Int = 1 << 20,
            preallocate: Bool = true,
            faultInjection: FaultInjection? = nil
        ) {
            self.preallocate = preallocate
            self.segmentBytes = max(segmentBytes, LogFormat.segmentHeaderSize + LogFormat.recordHeaderSize)
            self.durability = durability
            self.indexIntervalBytes = max(indexIntervalBytes, 1)
            self.writeBufferBytes = max(writeBufferBytes, 1)
            self.faultInjection = faultInjection
        }
    }

    /// Counters about commits since the log was opened.
    public struct Statistics: Sendable, Hashable {
        /// Successful ``SegmentLog/commit()`` calls that had something to write.
        public var commits: Int = 0
        /// Records made durable.
        public var recordsCommitted: Int = 0
        /// Record bytes (framing included) made durable.
        public var bytesCommitted: Int = 0
        /// Commits that failed and were rolled back.
        public var failedCommits: Int = 0
        /// How long the last commit took (write plus sync).
        public var lastCommitDuration: Duration = .zero
        /// Bytes cut from a torn or damaged tail when the log was opened.
        public var bytesTruncatedAtRecovery: Int = 0
    }
}
