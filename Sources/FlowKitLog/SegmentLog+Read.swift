extension SegmentLog {
    /// Reads committed records starting at `seq`, for gap repair and late joiners.
    ///
    /// A binary search finds the segment, the sparse index finds an offset at most
    /// ``Options/indexIntervalBytes`` before the record, and every returned record's checksum
    /// is verified.
    /// - Parameters:
    ///   - seq: The first seq wanted.
    ///   - maxCount: At most this many records.
    ///   - maxBytes: Stop before the payloads would exceed this many bytes (but always return
    ///     at least one record if `seq` is committed).
    /// - Returns: Records `seq, seq+1, ...` up to ``lastSeq``; empty if `seq` is past it.
    /// - Throws: ``LogError/Code/compacted`` if `seq` is older than the log's first record:
    ///   fetch a snapshot instead. ``LogError/Code/corrupt`` if a record fails validation.
    public func read(from seq: UInt64, maxCount: Int = 1024, maxBytes: Int = 4 << 20) throws -> [LogRecord] {
        try checkOpen()
        if let oldest = segments.first?.firstSeq, seq < oldest {
            throw LogError(
                .compacted,
                "seq \(seq) was removed by compaction; the log now starts at seq \(oldest). "
                    + "Load a snapshot taken at or after seq \(oldest - 1) and read from the seq after it"
            )
        }
        guard maxCount > 0, let last = lastSeq, seq <= last else { return [] }
        var records: [LogRecord] = []
        records.reserveCapacity(Int(min(UInt64(maxCount), last - seq + 1, 4096)))
        var bytes = 0
        var cursor = seq
        var index = segmentIndex(containing: seq)
        while index < segments.count, cursor <= last, records.count < maxCount {
            let segment = segments[index]
            var scanner = RecordScanner(
                fd: try segment.descriptor(fileSystem),
                path: segment.path,
                from: segment.offset(scanningFor: cursor),
                end: segment.size,
                chunkSize: 64 << 10,
                fileSystem: fileSystem
            )
            scan: while cursor <= last, records.count < maxCount {
                switch try scanner.next(buffer: &readBuffer) {
                case .end:
                    break scan
                case .damaged(let offset, let reason):
                    throw corruptRead(segment, offset: offset, reason: reason)
                case .record(let record):
                    if record.seq < cursor { continue }
                    guard record.seq == cursor else {
                        throw corruptRead(segment, offset: record.offset, reason: "seq \(record.seq) where \(cursor) was expected")
                    }
                    guard scanner.checksumMatches(record, buffer: readBuffer) else {
                        throw corruptRead(segment, offset: record.offset, reason: "checksum mismatch in record seq \(cursor)")
                    }
                    if !records.isEmpty, bytes + record.payloadLength > maxBytes { return records }
                    var read = LogRecord(seq: cursor, payload: Array(scanner.payload(record, buffer: readBuffer)))
                    read.payloadFormat = segment.payloadFormat
                    records.append(read)
                    bytes += record.payloadLength
                    cursor += 1
                }
            }
            index += 1
        }
        return records
    }

    /// The index of the last segment whose first seq is at or before `seq`.
    func segmentIndex(containing seq: UInt64) -> Int {
        var low = 0
        var high = segments.count
        while low < high {
            let mid = (low + high) / 2
            if segments[mid].firstSeq <= seq { low = mid + 1 } else { high = mid }
        }
        return max(low - 1, 0)
    }

    private func corruptRead(_ segment: Segment, offset: Int, reason: String) -> LogError {
        LogError(
            .corrupt,
            "record at offset \(offset) failed validation on read (\(reason)); the file changed on disk after it was "
                + "opened or the medium is failing. Reopen the log to re-validate it",
            path: segment.path
        )
    }
}
