#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

extension SegmentLog {
    /// Loads every segment, validating each record, and repairs what a crash can leave behind.
    func recover() throws {
        let names = try fileSystem.listDirectory(directory)
        let found = names.compactMap { name in LogFormat.firstSeq(ofSegmentNamed: name) }.sorted()
        var recovered: [Segment] = []
        for (index, firstSeq) in found.enumerated() {
            guard let segment = try recoverSegment(firstSeq: firstSeq, isLast: index == found.count - 1) else { continue }
            if let previous = recovered.last, segment.firstSeq != previous.nextSeq {
                let isLast = index == found.count - 1
                guard isLast, segment.lastSeq == nil, segment.firstSeq > previous.nextSeq else {
                    throw LogError(
                        .corrupt,
                        "segments are not contiguous: \(previous.path) ends before seq \(previous.nextSeq) but "
                            + "\(segment.path) starts at seq \(segment.firstSeq); a segment file is missing or foreign. "
                            + "Restore it, or move the later segments away to open the log without them",
                        path: segment.path
                    )
                }
                logger.notice(
                    "completing an interrupted reset: removing segments before the empty last segment",
                    metadata: ["flowkit.log.next_seq": "\(segment.firstSeq)", "flowkit.log.removed": "\(recovered.count)"]
                )
                for old in recovered {
                    old.close(fileSystem)
                    try fileSystem.remove(old.path)
                }
                try fileSystem.syncDirectory(directory)
                recovered.removeAll()
            }
            recovered.append(segment)
        }
        segments = recovered
        for sealed in segments.dropLast() { sealed.close(fileSystem) }
        if let last = segments.last {
            logger.debug(
                "opened log",
                metadata: [
                    "flowkit.log.segments": "\(segments.count)",
                    "flowkit.log.first_seq": "\(segments[0].firstSeq)",
                    "flowkit.log.next_seq": "\(last.nextSeq)",
                ]
            )
        }
    }

    /// Validates one segment; returns nil if it was a half-created last segment and was removed.
    private func recoverSegment(firstSeq: UInt64, isLast: Bool) throws -> Segment? {
        let path = segmentPath(firstSeq: firstSeq)
        let segment = Segment(firstSeq: firstSeq, path: path, size: 0, payloadFormat: 0)
        let fd = try segment.descriptor(fileSystem)
        let fileSize = try fileSystem.size(fd, path: path)
        var header = [UInt8](repeating: 0, count: LogFormat.segmentHeaderSize)
        let headerCount = try header.withUnsafeMutableBytes { bytes in
            try fileSystem.read(fd, into: bytes, at: 0, path: path)
        }
        let decoded = header.withUnsafeBytes { LogFormat.decodeSegmentHeader(UnsafeRawBufferPointer(rebasing: $0[..<headerCount])) }
        switch decoded {
        case .failure(let problem):
            if isLast && fileSize <= LogFormat.segmentHeaderSize {
                logger.warning(
                    "removing a half-created last segment (crash while creating it)",
                    metadata: ["flowkit.log.file": "\(path)", "flowkit.log.problem": "\(problem)"]
                )
                segment.close(fileSystem)
                try fileSystem.remove(path)
                try fileSystem.syncDirectory(directory)
                return nil
            }
            throw LogError(
                .corrupt,
                "segment header is invalid (\(problem)) in a file of \(fileSize) bytes; its records cannot be trusted. "
                    + "Restore the file from a replica or backup; refusing to open",
                path: path
            )
        case .success(let header) where header.firstSeq != firstSeq:
            throw LogError(.corrupt, "segment header says first seq \(header.firstSeq) but the file name says \(firstSeq); was it renamed?", path: path)
        case .success(let header):
            segment.payloadFormat = header.payloadFormat
        }

        var scanner = RecordScanner(
            fd: fd,
            path: path,
            from: LogFormat.segmentHeaderSize,
            end: fileSize,
            chunkSize: 1 << 20,
            fileSystem: fileSystem
        )
        var goodEnd = LogFormat.segmentHeaderSize
        var expected = firstSeq
        var damage: (offset: Int, reason: String)?
        scan: while true {
            switch try scanner.next(buffer: &readBuffer) {
            case .end:
                break scan
            case .damaged(let offset, let reason):
                damage = (offset, reason)
                break scan
            case .record(let record):
                guard record.seq == expected else {
                    damage = (record.offset, "record has seq \(record.seq) where \(expected) was expected")
                    break scan
                }
                guard scanner.checksumMatches(record, buffer: readBuffer) else {
                    damage = (record.offset, "checksum mismatch in record seq \(record.seq)")
                    break scan
                }
                segment.noteRecord(seq: record.seq, offset: record.offset, indexIntervalBytes: options.indexIntervalBytes)
                expected &+= 1
                goodEnd = record.offset + record.totalLength
            }
        }
        segment.size = goodEnd
        guard let damage else { return segment }
        // Zeros from the last record to the end: space reserved and never written (or a write
        // that reached no byte of it; or a segment a crash left unsealed). Nothing was lost, and
        // in the last segment appends continue into it.
        if try isZero(fd: fd, path: path, from: goodEnd, to: fileSize) {
            return segment
        }
        let lastGood = segment.lastSeq.map { "\($0)" } ?? "none"
        guard isLast else {
            throw LogError(
                .corrupt,
                "damaged record at offset \(damage.offset) after seq \(lastGood): \(damage.reason). This is not the last "
                    + "segment, so it is not a torn write and committed records would be lost; restore the file from a "
                    + "replica or backup. Refusing to open",
                path: path
            )
        }
        try truncateTail(segment, fd: fd, at: goodEnd, fileSize: fileSize, reason: damage.reason, expected: expected)
        return segment
    }

    private func truncateTail(_ segment: Segment, fd: Int32, at goodEnd: Int, fileSize: Int, reason: String, expected: UInt64) throws {
        let cut = fileSize - goodEnd
        logger.warning(
            "truncating the torn or damaged tail of the last segment",
            metadata: [
                "flowkit.log.file": "\(segment.path)",
                "flowkit.log.offset": "\(goodEnd)",
                "flowkit.log.bytes_cut": "\(cut)",
                "flowkit.log.last_good_seq": "\(segment.lastSeq.map { "\($0)" } ?? "none")",
                "flowkit.log.reason": "\(reason)",
            ]
        )
        if let later = try laterValidSeq(fd: fd, path: segment.path, from: goodEnd + 1, end: fileSize, minimum: expected) {
            logger.error(
                """
                valid-looking records follow the damaged one and were cut too; a torn write only loses uncommitted \
                records, so if acknowledged records are missing suspect media corruption
                """,
                metadata: ["flowkit.log.file": "\(segment.path)", "flowkit.log.later_seq": "\(later)"]
            )
        }
        try fileSystem.truncate(fd, to: goodEnd, path: segment.path)
        try fileSystem.sync(fd, path: segment.path)
        statistics.bytesTruncatedAtRecovery += cut
    }

    /// Whether every byte of the file from `start` to `end` is zero.
    private func isZero(fd: Int32, path: String, from start: Int, to end: Int) throws -> Bool {
        var offset = start
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while offset < end {
            let count = min(chunk.count, end - offset)
            let got = try chunk.withUnsafeMutableBytes { buffer in
                try fileSystem.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count]), at: offset, path: path)
            }
            guard got == count, chunk.withUnsafeBytes({ Self.isZero(UnsafeRawBufferPointer(rebasing: $0[..<count])) }) else { return false }
            offset += count
        }
        return true
    }

    /// Whether every byte is zero: the first is, and each equals the next (`memcmp` of the bytes
    /// against themselves one further on). A closure per byte took six seconds of a debug build's
    /// start over a 64 MiB segment reserved but barely written, and the tests restart coordinators.
    static func isZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return true }
        return bytes[0] == 0 && memcmp(base, base + 1, bytes.count - 1) == 0
    }

    /// Searches (at most 16 MiB of) the cut tail for a record with a valid checksum and seq.
    private func laterValidSeq(fd: Int32, path: String, from start: Int, end: Int, minimum: UInt64) throws -> UInt64? {
        let count = min(max(end - start, 0), 16 << 20)
        guard count > LogFormat.recordHeaderSize else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let got = try bytes.withUnsafeMutableBytes { buffer in
            try fileSystem.read(fd, into: buffer, at: start, path: path)
        }
        return bytes.withUnsafeBytes { buffer -> UInt64? in
            var offset = 0
            while offset + LogFormat.recordHeaderSize <= got {
                let length = Int(buffer.loadBigEndian(UInt32.self, at: offset))
                let seq = buffer.loadBigEndian(UInt64.self, at: offset + 8)
                if length <= got - offset - LogFormat.recordHeaderSize, seq >= minimum, seq - minimum < 1 << 32 {
                    let covered = buffer[(offset + 8)..<(offset + LogFormat.recordHeaderSize + length)]
                    if CRC32C.checksum(UnsafeRawBufferPointer(rebasing: covered)) == buffer.loadBigEndian(UInt32.self, at: offset + 4) {
                        return seq
                    }
                }
                offset += 1
            }
            return nil
        }
    }
}
