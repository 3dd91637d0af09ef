/// The on-disk format of a ``SegmentLog`` (format version 1).
///
/// ```text
/// FORMAT
/// ======
/// All integers are big-endian. CRC = CRC-32C (Castagnoli), see CRC32C.swift.
///
/// Directory
///   LOCK                        fcntl(F_SETLK)-locked while a SegmentLog has the directory open
///   <firstSeq:020>.seg          segments, e.g. 00000000000000000001.seg; sorted by name = by seq
///   anything else               ignored
///
/// Segment file = header (32 bytes) followed by records
///   offset size field
///   0      8    magic        "FKLOGSEG"
///   8      4    version      1
///   12     4    payloadFormat  the format of the records' payloads, numbered by the log's user
///                              (SegmentLog.Options.payloadFormat); 0 in segments written before
///                              it was recorded, when the field was reserved and always 0
///   16     8    firstSeq     seq of the first record (equals the file name)
///   24     4    headerCRC    CRC of bytes 0..<24
///   28     4    reserved     0
///
/// Record = 16-byte header + payload
///   0      4    length       payload byte count (at most 256 MiB)
///   4      4    crc          CRC of bytes 8..<16+length (seq and payload)
///   8      8    seq          record seq; firstSeq, firstSeq+1, ... without gaps
///   16     n    payload
///
/// Reserved space
///   A segment may end in zeros after its last record: space reserved when it was created
///   (posix_fallocate) and not yet written. Zeros are never a record (a record's CRC covers its
///   seq), so recovery takes them for the end of the records and leaves them; a segment is cut
///   to its last record when it is sealed.
///
/// Invariants
///   - Segment k+1 starts at the seq after segment k's last record (a segment may be empty).
///   - Every record of a segment has the segment's payload format: a log opened with another
///     format than its last segment's starts a new segment before its first append.
///   - Every segment but the last is complete and synced: it is fdatasync'ed before the next
///     segment file is created. Only the last segment can end in a torn (partial) record.
///   - Recovery truncates the last segment after its last valid record; damage anywhere else
///     is reported as LogError.corrupt and the log refuses to open.
///   - An empty last segment whose firstSeq is beyond the previous segment's end marks an
///     interrupted reset(nextSeq:); recovery completes it by removing the older segments.
/// ```
enum LogFormat {
    static let segmentMagic: [UInt8] = Array("FKLOGSEG".utf8)
    static let version: UInt32 = 1
    static let segmentHeaderSize = 32
    static let recordHeaderSize = 16
    static let maxPayloadBytes = 256 << 20
    static let segmentSuffix = ".seg"

    static func segmentName(firstSeq: UInt64) -> String {
        let digits = String(firstSeq)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits + segmentSuffix
    }

    /// The first seq encoded in a segment file name, or nil if `name` is not a segment.
    static func firstSeq(ofSegmentNamed name: String) -> UInt64? {
        guard name.hasSuffix(segmentSuffix), name.utf8.count == 20 + segmentSuffix.utf8.count else { return nil }
        let digits = name.dropLast(segmentSuffix.count)
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return UInt64(digits)
    }

    static func encodeSegmentHeader(firstSeq: UInt64, payloadFormat: UInt32) -> [UInt8] {
        var bytes = segmentMagic
        bytes.reserveCapacity(segmentHeaderSize)
        bytes.appendBigEndian(version)
        bytes.appendBigEndian(payloadFormat)
        bytes.appendBigEndian(firstSeq)
        bytes.appendBigEndian(CRC32C.checksum(bytes))
        bytes.appendBigEndian(UInt32(0))
        return bytes
    }

    /// Validates a segment header; returns its first seq and payload format, or why it is invalid.
    static func decodeSegmentHeader(_ bytes: UnsafeRawBufferPointer) -> Result<(firstSeq: UInt64, payloadFormat: UInt32), HeaderProblem> {
        guard bytes.count >= segmentHeaderSize else { return .failure(.short(bytes.count)) }
        guard bytes.prefix(8).elementsEqual(segmentMagic) else { return .failure(.badMagic) }
        guard CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<24])) == bytes.loadBigEndian(UInt32.self, at: 24) else {
            return .failure(.badChecksum)
        }
        let version = bytes.loadBigEndian(UInt32.self, at: 8)
        guard version == Self.version else { return .failure(.unsupportedVersion(version)) }
        return .success((bytes.loadBigEndian(UInt64.self, at: 16), bytes.loadBigEndian(UInt32.self, at: 12)))
    }

    enum HeaderProblem: Error, CustomStringConvertible {
        case short(Int), badMagic, badChecksum, unsupportedVersion(UInt32)

        var description: String {
            switch self {
            case .short(let count): "header is \(count) of \(LogFormat.segmentHeaderSize) bytes"
            case .badMagic: "bad magic (not a FlowKit log segment)"
            case .badChecksum: "header checksum mismatch"
            case .unsupportedVersion(let version): "unsupported format version \(version) (this build reads \(LogFormat.version))"
            }
        }
    }

    /// Appends one framed record to `buffer`.
    static func appendRecord(seq: UInt64, payload: UnsafeRawBufferPointer, to buffer: inout [UInt8]) {
        let start = buffer.count
        buffer.appendBigEndian(UInt32(payload.count))
        buffer.appendBigEndian(UInt32(0))
        buffer.appendBigEndian(seq)
        buffer.append(contentsOf: payload)
        let crc = buffer.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
        buffer.withUnsafeMutableBytes { $0.storeBytes(of: crc.bigEndian, toByteOffset: start + 4, as: UInt32.self) }
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}

extension UnsafeRawBufferPointer {
    func loadBigEndian<T: FixedWidthInteger>(_ type: T.Type, at offset: Int) -> T {
        T(bigEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
