/// A stable digest of a flow's state: equal states give equal digests in every process and every run.
///
/// A cluster compares digests to prove that its nodes converged, and to raise an alarm when two
/// nodes hold different states at the same sequence number. The digest is the first 128 bits of the
/// SHA-256 of the state's canonical encoding (see `CanonicalEncoding`), so it does not depend on
/// hash seeds, dictionary order or the platform.
///
/// ```swift
/// let digest = try StateDigest(of: store.state)
/// print(digest)   // 32 lowercase hex digits
/// ```
public struct StateDigest: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The digest's 16 bytes, most significant first.
    public let bytes: [UInt8]

    /// Digests a state.
    ///
    /// - Parameter state: Any `Encodable` value.
    /// - Throws: Whatever the value's `encode(to:)` throws.
    public init(of state: some Encodable) throws {
        var sha = SHA256()
        sha.update(try CanonicalEncoding.bytes(of: state))
        self.bytes = Array(sha.finalize().prefix(16))
    }

    /// Wraps 16 digest bytes computed elsewhere (a combination of digests).
    package init(bytes: [UInt8]) {
        precondition(bytes.count == 16, "a state digest is 16 bytes")
        self.bytes = bytes
    }

    /// Rebuilds a digest from its 32-digit hex form.
    ///
    /// - Returns: `nil` when `hex` is not 32 hex digits.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// Combines digests, in the given order, into one: a node's digest of all its instances.
    public init(combining parts: some Sequence<(key: String, digest: StateDigest)>) {
        var sha = SHA256()
        for part in parts {
            let length = UInt32(truncatingIfNeeded: part.key.utf8.count)
            for shift in [0, 8, 16, 24] as [UInt32] { sha.update(UInt8(truncatingIfNeeded: length >> shift)) }
            sha.update(part.key.utf8)
            sha.update(part.digest.bytes)
        }
        self.bytes = Array(sha.finalize().prefix(16))
    }

    public var description: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let hex = try container.decode(String.self)
        guard let digest = StateDigest(hex: hex) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "A state digest is 32 hex digits; got \"\(hex)\""
            )
        }
        self = digest
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
