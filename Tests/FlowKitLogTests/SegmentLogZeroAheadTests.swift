import FlowKitLog
import Testing

#if canImport(Glibc)
import Glibc

/// Which bytes of a file the file system holds as *unwritten* extents: reserved by
/// `posix_fallocate` and never written (`FS_IOC_FIEMAP`, `FIEMAP_EXTENT_UNWRITTEN`).
enum FileExtents {
    private static let fiemapRequest: UInt = 0xC020_660B  // _IOWR('f', 11, struct fiemap)
    private static let syncFlag: UInt32 = 0x1  // FIEMAP_FLAG_SYNC
    private static let unwrittenFlag: UInt32 = 0x800  // FIEMAP_EXTENT_UNWRITTEN
    private static let headerBytes = 32
    private static let extentBytes = 56
    private static let maxExtents = 64

    /// The unwritten ranges of the file at `path`, or nil if the file system does not say.
    static func unwrittenRanges(_ path: String) -> [Range<Int>]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: headerBytes + maxExtents * extentBytes, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: headerBytes + maxExtents * extentBytes)
        buffer.storeBytes(of: 0, toByteOffset: 0, as: UInt64.self)  // fm_start
        buffer.storeBytes(of: UInt64.max, toByteOffset: 8, as: UInt64.self)  // fm_length
        buffer.storeBytes(of: syncFlag, toByteOffset: 16, as: UInt32.self)  // fm_flags
        buffer.storeBytes(of: UInt32(maxExtents), toByteOffset: 24, as: UInt32.self)  // fm_extent_count
        guard ioctl(fd, fiemapRequest, buffer) == 0 else { return nil }
        let mapped = Int(buffer.load(fromByteOffset: 20, as: UInt32.self))
        return (0..<mapped).compactMap { index in
            let extent = buffer + headerBytes + index * extentBytes
            let logical = Int(extent.load(fromByteOffset: 0, as: UInt64.self))
            let length = Int(extent.load(fromByteOffset: 16, as: UInt64.self))
            let flags = extent.load(fromByteOffset: 40, as: UInt32.self)
            return flags & unwrittenFlag != 0 ? logical..<logical + length : nil
        }
    }

    /// How many bytes of `range` are unwritten in the file at `path`.
    static func unwrittenBytes(_ path: String, in range: Range<Int>) -> Int? {
        unwrittenRanges(path).map { ranges in
            ranges.reduce(0) { sum, unwritten in sum + max(0, min(range.upperBound, unwritten.upperBound) - max(range.lowerBound, unwritten.lowerBound)) }
        }
    }

    /// Whether this machine's temporary directory reports unwritten extents at all.
    static let areReported: Bool = {
        var template = Array("/tmp/flowkit-fiemap-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return false }
        let path = String(cString: template)
        defer { unlink(path) }
        let reserved = posix_fallocate(fd, 0, 1 << 20) == 0
        close(fd)
        return reserved && (unwrittenBytes(path, in: 0..<(1 << 20)) ?? 0) > 0
    }()
}

@Suite("SegmentLog writes zeros ahead of its records")
struct SegmentLogZeroAheadTests {
    /// A synced commit into space `posix_fallocate` reserved changes the file's extent map, which
    /// makes its `fdatasync` write the inode as well; the log writes zeros a little ahead of its
    /// records so that most commits land in space already written, and leaves the rest reserved.
    @Test(.enabled(if: FileExtents.areReported, "the file system does not report unwritten extents"))
    func theSpaceAfterTheRecordsIsWrittenAheadAndTheRestStaysReserved() throws {
        let dir = TemporaryDirectory("zeroahead")
        let segmentBytes = 1 << 20
        let log = try SegmentLog(directory: dir.path, options: .init(segmentBytes: segmentBytes), logger: quietLogger)
        try log.append(records(1...10, size: 100))
        try log.commit()
        let segment = dir.file(segmentFiles(in: dir.path)[0])
        #expect(fileSize(segment) == segmentBytes, "still reserved as a whole")
        var end = 32 + 10 * (16 + 100)
        #expect(FileExtents.unwrittenBytes(segment, in: 0..<end + 60 << 10) == 0)
        let farEnough = 256 << 10
        #expect(FileExtents.unwrittenBytes(segment, in: farEnough..<segmentBytes) == segmentBytes - farEnough)

        // Commits past the zeroed space zero the next stretch; each one in between writes none.
        for batch in 0..<6 {
            let first = UInt64(11 + batch * 100)
            try log.append(records(first...first + 99, size: 100))
            try log.commit()
        }
        end += 600 * (16 + 100)
        #expect(FileExtents.unwrittenBytes(segment, in: 0..<end + 60 << 10) == 0)
        let tail = end + 128 << 10
        #expect(FileExtents.unwrittenBytes(segment, in: tail..<segmentBytes) == segmentBytes - tail)
        log.close()

        // The zeros read as the reserved space always did: past the last record, nothing to cut.
        let reopened = try SegmentLog(directory: dir.path, options: .init(segmentBytes: segmentBytes), logger: quietLogger)
        #expect(reopened.lastSeq == 610)
        #expect(reopened.statistics.bytesTruncatedAtRecovery == 0)
        #expect(try readAll(reopened) == records(1...610, size: 100))
        try reopened.append(records(611...700, size: 100))
        try reopened.commit()
        #expect(try readAll(reopened, from: 600) == records(600...700, size: 100))
        reopened.close()
    }

    /// A relaxed log does not sync its commits, so it has nothing to gain: it writes no zeros.
    @Test(.enabled(if: FileExtents.areReported, "the file system does not report unwritten extents"))
    func aRelaxedLogWritesNoZeros() throws {
        let dir = TemporaryDirectory("zeroahead-relaxed")
        let log = try SegmentLog(directory: dir.path, options: .init(segmentBytes: 1 << 20, durability: .relaxed), logger: quietLogger)
        try log.append(records(1...10, size: 100))
        try log.commit()
        let segment = dir.file(segmentFiles(in: dir.path)[0])
        #expect(FileExtents.unwrittenBytes(segment, in: 8 << 10..<(1 << 20)) == (1 << 20) - (8 << 10))
        log.close()
    }
}
#endif
