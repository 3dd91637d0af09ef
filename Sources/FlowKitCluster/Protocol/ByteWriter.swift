/// Appends big-endian (network order) fields to a byte buffer: the wire protocol's encoder.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func write(_ value: UInt8) { bytes.append(value) }

    // Each field is one append of its big-endian bytes: a byte at a time paid a capacity and
    // uniqueness check per byte, which showed in the coordinator's profile (it writes five u64s
    // per entry, twice: for the log and for ENTRIES).
    mutating func write(_ value: UInt16) { append(bigEndian: value) }

    mutating func write(_ value: UInt32) { append(bigEndian: value) }

    mutating func write(_ value: UInt64) { append(bigEndian: value) }

    @inline(__always)
    private mutating func append(bigEndian value: some FixedWidthInteger) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func write(contentsOf other: some Collection<UInt8>) { bytes.append(contentsOf: other) }

    /// A UTF-8 string preceded by its byte length as a `u16`.
    mutating func writeShortString(_ string: String) {
        let utf8 = string.utf8
        precondition(utf8.count <= Int(UInt16.max), "a short string is at most 65535 bytes")
        write(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// Bytes preceded by their length as a `u32`: one record of a batch.
    mutating func writeLengthPrefixed(_ record: some Collection<UInt8>) {
        write(UInt32(record.count))
        bytes.append(contentsOf: record)
    }

    /// Reserves a `u32` length, runs `body`, then fills in how many bytes it wrote.
    mutating func writeLengthPrefixed(_ body: (inout ByteWriter) -> Void) {
        let lengthAt = bytes.count
        write(UInt32(0))
        body(&self)
        let length = UInt32(bytes.count - lengthAt - 4)
        bytes[lengthAt] = UInt8(truncatingIfNeeded: length >> 24)
        bytes[lengthAt + 1] = UInt8(truncatingIfNeeded: length >> 16)
        bytes[lengthAt + 2] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[lengthAt + 3] = UInt8(truncatingIfNeeded: length)
    }
}

/// Reads big-endian fields from untrusted bytes; every read is bounds-checked and throws
/// ``ProtocolError`` rather than trapping.
///
/// Field names and contexts are static, and error messages are composed only when one is thrown: a
/// replaying node decodes hundreds of thousands of entries a second, and building a description
/// for each read cost more than the read. For the same reason a reader holds one reference (its
/// bytes), so copying one is a single retain.
struct ByteReader {
    /// What a reader reads, for error messages ("ENTRIES records", "ENTRIES", "a RANGE entry").
    enum Subject {
        case described(StaticString)
        case message(MessageType)
    }

    private let bytes: [UInt8]
    private(set) var offset: Int
    private let end: Int
    private let subject: Subject
    /// The record this reader was split off for (``mapRecords(_:_:)``), if any.
    private let record: StaticString?
    /// The protocol version of the message being read (its header's), by which records whose
    /// layout changed between versions are read (``Entry``, ``Submission``).
    var protocolVersion: UInt8

    init(_ bytes: [UInt8], context: StaticString, protocolVersion: UInt8 = WireHeader.version) {
        self.init(bytes, from: 0, to: bytes.count, subject: .described(context), protocolVersion: protocolVersion)
    }

    init(
        _ bytes: [UInt8], from start: Int, to end: Int, subject: Subject, record: StaticString? = nil,
        protocolVersion: UInt8 = WireHeader.version
    ) {
        self.bytes = bytes
        self.offset = start
        self.end = end
        self.subject = subject
        self.record = record
        self.protocolVersion = protocolVersion
    }

    /// What is being read, for error messages ("ENTRIES header", "a RANGE entry").
    var context: String {
        let outer = switch subject {
        case .described(let text): "\(text)"
        case .message(let type): type.name
        }
        guard let record else { return outer }
        return "\(outer) \(record)"
    }

    var remaining: Int { end - offset }
    var isAtEnd: Bool { offset == end }

    private mutating func take(_ count: Int, _ field: StaticString, isLength: Bool = false) throws -> Int {
        guard count >= 0, remaining >= count else {
            throw ProtocolError(
                .truncated,
                "\(context) is truncated: \(field)\(isLength ? " length" : "") needs \(count) bytes, \(remaining) left"
            )
        }
        defer { offset += count }
        return offset
    }

    mutating func readUInt8(_ field: StaticString, isLength: Bool = false) throws -> UInt8 {
        bytes[try take(1, field, isLength: isLength)]
    }

    mutating func readUInt16(_ field: StaticString, isLength: Bool = false) throws -> UInt16 {
        let at = try take(2, field, isLength: isLength)
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    mutating func readUInt32(_ field: StaticString, isLength: Bool = false) throws -> UInt32 {
        let at = try take(4, field, isLength: isLength)
        var value: UInt32 = 0
        for index in at..<at + 4 { value = value << 8 | UInt32(bytes[index]) }
        return value
    }

    mutating func readUInt64(_ field: StaticString, isLength: Bool = false) throws -> UInt64 {
        let at = try take(8, field, isLength: isLength)
        var value: UInt64 = 0
        for index in at..<at + 8 { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    mutating func readBytes(_ count: Int, _ field: StaticString) throws -> [UInt8] {
        let at = try take(count, field)
        return Array(bytes[at..<at + count])
    }

    /// The next byte, without reading it; nil at the end.
    func peekUInt8() -> UInt8? {
        isAtEnd ? nil : bytes[offset]
    }

    mutating func readRest() -> [UInt8] {
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    /// Throws unless every byte was read: a fixed header with trailing bytes is malformed, at every
    /// wall alike.
    mutating func expectEnd(of message: StaticString) throws {
        guard isAtEnd else {
            throw ProtocolError(.malformed, "\(message) has \(remaining) unexpected trailing byte(s) after its fields")
        }
    }

    /// A short-string's bytes, unchecked: for a field whose text a rule elsewhere validates.
    mutating func readShortBytes(_ field: StaticString) throws -> [UInt8] {
        let length = Int(try readUInt16(field, isLength: true))
        return try readBytes(length, field)
    }

    mutating func readShortString(_ field: StaticString) throws -> String {
        let length = Int(try readUInt16(field, isLength: true))
        let at = try take(length, field)
        let string = bytes.withUnsafeBufferPointer { buffer -> String? in
            let utf8 = UnsafeBufferPointer(rebasing: buffer[at..<at + length])
            // Addresses and names are ASCII in practice, and ASCII is valid UTF-8: the common case
            // skips the general validation.
            if utf8.allSatisfy({ $0 < 0x80 }) { return String(decoding: utf8, as: UTF8.self) }
            return String(validating: utf8, as: UTF8.self)
        }
        guard let string else {
            throw ProtocolError(.malformed, "\(context): \(field) is not valid UTF-8")
        }
        return string
    }

    /// Decodes the rest as `u32`-length-prefixed records, each with `decode` given a reader over the
    /// record alone (no copy of the bytes, no list of readers in between).
    mutating func mapRecords<Record>(_ field: StaticString, _ decode: (inout ByteReader) throws -> Record) throws -> [Record] {
        var records: [Record] = []
        while !isAtEnd {
            let length = Int(try readUInt32(field, isLength: true))
            let at = try take(length, field)
            var reader = ByteReader(bytes, from: at, to: at + length, subject: subject, record: field, protocolVersion: protocolVersion)
            records.append(try decode(&reader))
        }
        return records
    }
}
