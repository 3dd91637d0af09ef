/// Reads framed records from a segment file sequentially, through a reusable buffer.
///
/// Used by recovery (validating every record) and by reads (from an index offset forward).
/// The buffer holds file bytes `[bufferOffset, bufferOffset + filled)`; `position` is the
/// start of the next record inside it.
struct RecordScanner {
    /// One record found by ``next()``; its bytes stay in the buffer until the next call.
    struct Header {
        var seq: UInt64
        /// File offset of the record's first byte.
        var offset: Int
        var payloadLength: Int
        var storedCRC: UInt32
        /// Index of the record's first byte in the buffer.
        var bufferIndex: Int

        var totalLength: Int { LogFormat.recordHeaderSize + payloadLength }
    }

    enum Step {
        case record(Header)
        /// No more bytes before `end`.
        case end
        /// The bytes at `offset` do not form a complete, well-framed record.
        case damaged(offset: Int, reason: String)
    }

    let fd: Int32
    let path: String
    let end: Int
    let fileSystem: FileSystem
    /// How much to read at a time (more when a record is larger).
    let chunkSize: Int
    private var bufferOffset: Int
    private var filled = 0
    private var position = 0

    init(fd: Int32, path: String, from offset: Int, end: Int, chunkSize: Int, fileSystem: FileSystem) {
        self.chunkSize = chunkSize
        self.fd = fd
        self.path = path
        self.end = end
        self.fileSystem = fileSystem
        self.bufferOffset = offset
    }

    /// Parses the next record, reading more of the file into `buffer` when needed.
    mutating func next(buffer: inout [UInt8]) throws -> Step {
        let start = bufferOffset + position
        if start >= end { return .end }
        guard try ensure(LogFormat.recordHeaderSize, buffer: &buffer) else {
            return .damaged(offset: start, reason: "torn record header: \(end - start) of \(LogFormat.recordHeaderSize) bytes")
        }
        let (length, crc, seq) = buffer.withUnsafeBytes { bytes in
            (
                Int(bytes.loadBigEndian(UInt32.self, at: position)),
                bytes.loadBigEndian(UInt32.self, at: position + 4),
                bytes.loadBigEndian(UInt64.self, at: position + 8)
            )
        }
        guard length <= LogFormat.maxPayloadBytes else {
            return .damaged(offset: start, reason: "record length \(length) exceeds the format's maximum")
        }
        guard try ensure(LogFormat.recordHeaderSize + length, buffer: &buffer) else {
            return .damaged(offset: start, reason: "torn record: \(end - start) of \(LogFormat.recordHeaderSize + length) bytes")
        }
        let header = Header(seq: seq, offset: start, payloadLength: length, storedCRC: crc, bufferIndex: position)
        position += header.totalLength
        return .record(header)
    }

    /// Whether the stored CRC matches the record's seq and payload.
    func checksumMatches(_ header: Header, buffer: [UInt8]) -> Bool {
        buffer.withUnsafeBytes { bytes in
            let covered = bytes[(header.bufferIndex + 8)..<(header.bufferIndex + header.totalLength)]
            return CRC32C.checksum(UnsafeRawBufferPointer(rebasing: covered)) == header.storedCRC
        }
    }

    /// The record's payload bytes, valid until the next call to ``next(buffer:)``.
    func payload(_ header: Header, buffer: [UInt8]) -> ArraySlice<UInt8> {
        let start = header.bufferIndex + LogFormat.recordHeaderSize
        return buffer[start..<(start + header.payloadLength)]
    }

    /// Makes `count` bytes available from `position`; false if the file ends first.
    private mutating func ensure(_ count: Int, buffer: inout [UInt8]) throws -> Bool {
        if filled - position >= count { return true }
        if bufferOffset + position + count > end { return false }
        if position > 0 {
            let kept = filled - position
            if kept > 0 {
                buffer.withUnsafeMutableBytes { bytes in
                    bytes.baseAddress!.copyMemory(from: bytes.baseAddress! + position, byteCount: kept)
                }
            }
            bufferOffset += position
            filled = kept
            position = 0
        }
        if buffer.count < max(count, chunkSize) {
            var grown = [UInt8](repeating: 0, count: max(count, chunkSize, buffer.count * 2))
            let kept = filled
            grown.withUnsafeMutableBytes { target in
                buffer.withUnsafeBytes { source in target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<kept])) }
            }
            buffer = grown
        }
        let wanted = min(buffer.count - filled, end - (bufferOffset + filled), max(chunkSize, count - filled))
        let (fd, path, fileSystem, filled, bufferOffset) = (fd, path, fileSystem, filled, bufferOffset)
        let got = try buffer.withUnsafeMutableBytes { bytes in
            try fileSystem.read(
                fd,
                into: UnsafeMutableRawBufferPointer(rebasing: bytes[filled..<(filled + wanted)]),
                at: bufferOffset + filled,
                path: path
            )
        }
        self.filled += got
        return self.filled - position >= count
    }
}
