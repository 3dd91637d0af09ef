import Logging

extension SegmentLog {
    /// Appends one record to the uncommitted batch.
    ///
    /// The record is durable, readable and safe to acknowledge only after ``commit()``.
    /// - Parameters:
    ///   - seq: Must equal ``nextSeq`` (any value on a log that never held a record).
    ///   - payload: The record's bytes, at most 256 MiB.
    /// - Throws: ``LogError/Code/nonContiguous`` or ``LogError/Code/invalidArgument`` without
    ///   changing anything; ``LogError/Code/diskFull`` or ``LogError/Code/io`` if handing
    ///   buffered bytes to the OS failed, after rolling the whole uncommitted batch back.
    public func append(seq: UInt64, payload: UnsafeRawBufferPointer) throws {
        try checkOpen()
        try validate(seq: seq, payloadCount: payload.count, position: 0)
        try appendValidated(seq: seq, payload: payload)
    }

    /// Appends one record to the uncommitted batch, like the `UnsafeRawBufferPointer` variant.
    /// - Parameters:
    ///   - seq: Must equal ``nextSeq`` (any value on a log that never held a record).
    ///   - payload: The record's bytes, at most 256 MiB.
    public func append(seq: UInt64, payload: [UInt8]) throws {
        try payload.withUnsafeBytes { bytes in try append(seq: seq, payload: bytes) }
    }

    /// Appends records with contiguous seqs to the uncommitted batch.
    ///
    /// The whole collection is validated first, so a bad seq or size appends nothing.
    /// - Parameter records: Records whose seqs continue from ``nextSeq`` without gaps.
    /// - Throws: As the single-record `append(seq:payload:)`.
    public func append(_ records: some Collection<LogRecord>) throws {
        try checkOpen()
        for (position, record) in records.enumerated() {
            try validate(seq: record.seq, payloadCount: record.payload.count, position: position, batchStart: records.first?.seq)
        }
        for record in records {
            try record.payload.withUnsafeBytes { bytes in try appendValidated(seq: record.seq, payload: bytes) }
        }
    }

    /// Makes every appended record durable (per ``Options/durability``) and readable.
    ///
    /// This is the group-commit point: append a batch, commit once, then acknowledge.
    /// If writing or syncing fails, the batch is rolled back (the segment is truncated to the
    /// last commit and segment files created since are removed): the log is exactly as after
    /// the last successful commit, ``nextSeq`` is back to ``lastSeq`` + 1 and the same records
    /// can be appended and committed again once the cause (say, a full disk) is gone.
    /// - Returns: The last durable seq (``lastSeq``).
    /// - Throws: ``LogError/Code/diskFull`` or ``LogError/Code/io`` after rolling back.
    @discardableResult
    public func commit() throws -> UInt64? {
        try checkOpen()
        guard pendingRecords > 0 else { return lastSeq }
        let start = ContinuousClock.now
        do {
            try flushWriteBuffer()
            if options.durability == .synced {
                for segment in segments[max(0, committed.segmentCount - 1)...] where segment.needsSync {
                    try fileSystem.sync(try segment.descriptor(fileSystem), path: segment.path)
                    segment.needsSync = false
                }
            }
        } catch {
            statistics.failedCommits += 1
            rollBack(after: error)
            throw error
        }
        let active = segments[segments.count - 1]
        statistics.commits += 1
        statistics.recordsCommitted += pendingRecords
        statistics.bytesCommitted += pendingBytes
        statistics.lastCommitDuration = start.duration(to: .now)
        committed = Checkpoint(segmentCount: segments.count, activeSize: active.size, lastSeq: active.lastSeq)
        pendingRecords = 0
        pendingBytes = 0
        return lastSeq
    }

    private func validate(seq: UInt64, payloadCount: Int, position: Int, batchStart: UInt64? = nil) throws {
        guard payloadCount <= LogFormat.maxPayloadBytes else {
            throw LogError(.invalidArgument, "payload of seq \(seq) is \(payloadCount) bytes; the maximum is \(LogFormat.maxPayloadBytes)")
        }
        let expected: UInt64? = if let next = nextSeq { next &+ UInt64(position) } else { batchStart.map { $0 &+ UInt64(position) } }
        guard let expected, seq != expected else { return }
        let last = lastSeq.map { "\($0)" } ?? "none"
        throw LogError(
            .nonContiguous,
            "append of seq \(seq) (batch position \(position)) does not continue the log: expected seq \(expected) "
                + "(last committed \(last), \(pendingRecords) pending); seqs must be contiguous"
        )
    }

    private func appendValidated(seq: UInt64, payload: UnsafeRawBufferPointer) throws {
        let recordSize = LogFormat.recordHeaderSize + payload.count
        do {
            if let active = segments.last {
                if active.payloadFormat != options.payloadFormat {
                    // A segment's records share one format: what an older build wrote stays in
                    // its segments, read as it was written.
                    if active.lastSeq == nil { try restamp(active) } else { try roll(firstSeq: seq) }
                } else if active.lastSeq != nil, active.size + writeBuffer.count + recordSize > options.segmentBytes {
                    try roll(firstSeq: seq)
                }
            } else {
                try createSegment(firstSeq: seq)
            }
            let active = segments[segments.count - 1]
            let offset = active.size + writeBuffer.count
            LogFormat.appendRecord(seq: seq, payload: payload, to: &writeBuffer)
            active.noteRecord(seq: seq, offset: offset, indexIntervalBytes: options.indexIntervalBytes)
            pendingRecords += 1
            pendingBytes += recordSize
            if writeBuffer.count >= options.writeBufferBytes { try flushWriteBuffer() }
        } catch {
            rollBack(after: error)
            throw error
        }
    }

    /// Seals the active segment (synced, so only the last segment can ever be torn) and starts a new one.
    private func roll(firstSeq: UInt64) throws {
        try flushWriteBuffer()
        let active = segments[segments.count - 1]
        if active.needsSync {
            try fileSystem.sync(try active.descriptor(fileSystem), path: active.path)
            active.needsSync = false
        }
        if options.preallocate {
            // A sealed segment ends at its last record, as if it had grown record by record.
            let fd = try active.descriptor(fileSystem)
            try fileSystem.truncate(fd, to: active.size, path: active.path)
            try fileSystem.sync(fd, path: active.path)
        }
        active.close(fileSystem)  // sealed: reopened on demand, so descriptors stay few
        try createSegment(firstSeq: firstSeq)
    }

    /// Creates a segment file with its header, synced along with the directory entry.
    func createSegment(firstSeq: UInt64) throws {
        let path = segmentPath(firstSeq: firstSeq)
        let fd = try fileSystem.openFile(path, create: true)
        let segment = Segment(firstSeq: firstSeq, path: path, size: 0, payloadFormat: options.payloadFormat)
        segment.adopt(fd)
        segments.append(segment)
        try LogFormat.encodeSegmentHeader(firstSeq: firstSeq, payloadFormat: options.payloadFormat).withUnsafeBytes { bytes in
            try fileSystem.write(fd, bytes, at: 0, path: path)
        }
        segment.size = LogFormat.segmentHeaderSize
        try fileSystem.sync(fd, path: path)
        try fileSystem.syncDirectory(directory)
        // After the header is durable: a crash in between leaves a valid segment that is short.
        if options.preallocate {
            fileSystem.preallocate(fd, size: options.segmentBytes, path: path)
            try fileSystem.sync(fd, path: path)
        }
    }

    /// Gives an empty last segment written with another payload format this log's: its header is
    /// written again (one 32-byte write, synced) before any record goes in.
    private func restamp(_ segment: Segment) throws {
        precondition(segment.lastSeq == nil && writeBuffer.isEmpty, "only an empty segment changes its payload format")
        let fd = try segment.descriptor(fileSystem)
        try LogFormat.encodeSegmentHeader(firstSeq: segment.firstSeq, payloadFormat: options.payloadFormat).withUnsafeBytes { bytes in
            try fileSystem.write(fd, bytes, at: 0, path: segment.path)
        }
        try fileSystem.sync(fd, path: segment.path)
        segment.payloadFormat = options.payloadFormat
    }

    /// Hands the write buffer to the OS (`pwrite`), without syncing.
    ///
    /// In a reserved segment of a synced log the same write also puts zeros in the space just
    /// past the records, ``zeroAheadBytes`` at a time. Space that `posix_fallocate` reserved is
    /// *unwritten* to the file system until written: the first write into it changes the file's
    /// extent map, and the `fdatasync` after it writes the inode too (on ext4, a second write to
    /// the disk and its wait) whenever a commit reaches a block not written before. Zeroing ahead
    /// makes one commit in every `zeroAheadBytes` pay that instead: synced commits of 64 records
    /// (`log-perf`, Benchmarks/LogPerf) went from 165–175 to 91–104 µs at p50 on this machine's
    /// disk. The zeros are what recovery already reads past the last record.
    private func flushWriteBuffer() throws {
        guard !writeBuffer.isEmpty, let active = segments.last else { return }
        let fd = try active.descriptor(fileSystem)
        active.needsSync = true
        let recordBytes = writeBuffer.count
        let end = active.size + recordBytes
        var zeroedThrough = active.zeroedThrough
        if options.preallocate, options.durability == .synced, end > zeroedThrough, end < options.segmentBytes {
            let page = 4096
            zeroedThrough = min(options.segmentBytes, (end + Self.zeroAheadBytes + page - 1) / page * page)
            writeBuffer.append(contentsOf: repeatElement(0, count: zeroedThrough - end))
        }
        try writeBuffer.withUnsafeBytes { bytes in
            try fileSystem.write(fd, bytes, at: active.size, path: active.path)
        }
        active.size = end
        active.zeroedThrough = max(zeroedThrough, end)
        writeBuffer.removeAll(keepingCapacity: true)
    }

    /// How far past its records a reserved segment is zeroed at a time (see `flushWriteBuffer`).
    static let zeroAheadBytes = 64 << 10

    /// Restores the state of the last commit after a failed write or sync.
    func rollBack(after cause: any Error) {
        logger.error(
            "write failed; rolling the uncommitted batch back to the last commit",
            metadata: [
                "flowkit.log.error": "\(cause)",
                "flowkit.log.pending": "\(pendingRecords)",
                "flowkit.log.last_seq": "\(committed.lastSeq.map { "\($0)" } ?? "none")",
            ]
        )
        writeBuffer.removeAll(keepingCapacity: true)
        pendingRecords = 0
        pendingBytes = 0
        do {
            var removedFiles = false
            while segments.count > committed.segmentCount {
                let segment = segments.removeLast()
                segment.close(fileSystem)
                try fileSystem.remove(segment.path)
                removedFiles = true
            }
            if let active = segments.last {
                if active.size != committed.activeSize || active.needsSync {
                    try fileSystem.truncate(try active.descriptor(fileSystem), to: committed.activeSize, path: active.path)
                }
                active.size = committed.activeSize
                active.zeroedThrough = min(active.zeroedThrough, committed.activeSize)
                active.forget(after: committed.lastSeq)
                active.needsSync = false
            }
            if removedFiles { try fileSystem.syncDirectory(directory) }
        } catch {
            state = .failed(error as? LogError ?? LogError(.io, "\(error)"))
            logger.critical(
                "rollback failed; the log refuses further use until it is reopened",
                metadata: ["flowkit.log.error": "\(error)"]
            )
        }
    }
}
