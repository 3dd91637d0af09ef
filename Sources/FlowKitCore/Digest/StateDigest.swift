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
    /// The digest's first 8 bytes and its last 8, each read most significant first: the 16 bytes
    /// held inline, so a digest costs no allocation (a node keeps one for every instance, and its
    /// reports carry one for every instance that changed).
    package let high: UInt64
    package let low: UInt64

    /// The digest's 16 bytes, most significant first.
    public var bytes: [UInt8] {
        (0..<16).map { index in
            UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> (8 * (7 - UInt64(index % 8))))
        }
    }

    /// Digests a state.
    ///
    /// - Parameter state: Any `Encodable` value.
    /// - Throws: Whatever the value's `encode(to:)` throws.
    public init(of state: some Encodable) throws {
        var sha = SHA256()
        sha.update(try CanonicalEncoding.bytes(of: state))
        self.init(bytes: sha.finalize().prefix(16))
    }

    /// Wraps 16 digest bytes computed elsewhere (a combination of digests, or read off the wire).
    package init(bytes: some Collection<UInt8>) {
        precondition(bytes.count == 16, "a state digest is 16 bytes")
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// A digest from its two halves, most significant first.
    package init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Rebuilds a digest from its 32-digit hex form.
    ///
    /// - Returns: `nil` when `hex` is not 32 hex digits.
    public init?(hex: String) {
        var halves: (high: UInt64, low: UInt64) = (0, 0)
        var count = 0
        for digit in hex.utf8 {
            guard count < 32, let value = Self.nibble(digit) else { return nil }
            if count < 16 { halves.high = halves.high << 4 | UInt64(value) } else { halves.low = halves.low << 4 | UInt64(value) }
            count += 1
        }
        guard count == 32 else { return nil }
        self.init(high: halves.high, low: halves.low)
    }

    /// Combines digests, in the given order, into one: a node's digest of all its instances.
    public init(combining parts: some Sequence<(key: String, digest: StateDigest)>) {
        var sha = SHA256()
        for part in parts {
            let length = UInt32(truncatingIfNeeded: part.key.utf8.count)
            withUnsafeBytes(of: length.littleEndian) { sha.update(bytesOf: $0) }
            sha.update(part.key.utf8)
            withUnsafeBytes(of: part.digest.high.bigEndian) { sha.update(bytesOf: $0) }
            withUnsafeBytes(of: part.digest.low.bigEndian) { sha.update(bytesOf: $0) }
        }
        self.init(bytes: sha.finalize().prefix(16))
    }

    public var description: String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 32) { buffer in
            digits.withUTF8Buffer { digits in
                for index in 0..<32 {
                    let half = index < 16 ? high : low
                    buffer[index] = digits[Int(truncatingIfNeeded: half >> (4 * (15 - UInt64(index % 16))) & 0xF)]
                }
            }
            return 32
        }
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
