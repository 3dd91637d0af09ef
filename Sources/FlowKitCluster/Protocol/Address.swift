import FlowKitCore

/// A flow instance's address: `flowName/instanceKey`, such as `counter/room-42`.
///
/// The flow name is lowercase letters, digits, `-` and `_`; the key is 1 to 200 bytes of UTF-8
/// without control characters. Addresses are the publish socket's topics, so `counter/` subscribes
/// to every counter.
public struct Address: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// `flow/key`, as it travels on the wire.
    public let description: String
    /// The flow name's length in UTF-8 bytes, where the slash is: the parts are read from the text
    /// when asked for, so an address is one string and a byte (a process holding a million
    /// instances holds a million addresses).
    private let flowBytes: UInt8

    /// The flow name: what comes before the first `/`.
    public var flow: String { String(description.utf8.prefix(Int(flowBytes)))! }
    /// The instance key: everything after the first `/` (it may contain more).
    public var key: String { String(description.utf8.dropFirst(Int(flowBytes) + 1))! }

    /// The longest an address may be, in UTF-8 bytes.
    public static let maxBytes = 256

    public init(flow: String, key: String) throws {
        try Self.validate(flow: flow, key: key)
        description = "\(flow)/\(key)"
        flowBytes = UInt8(flow.utf8.count)
    }

    /// Throws unless `flow` and `key` are a valid flow name and instance key.
    private static func validate(flow: some StringProtocol, key: some StringProtocol) throws {
        guard !flow.isEmpty, flow.utf8.count <= 48,
            flow.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            })
        else {
            throw ProtocolError(
                .malformed,
                "flow name \"\(flow)\" must be 1-48 characters of a-z, 0-9, - and _"
            )
        }
        guard !key.isEmpty, key.utf8.count <= 200, !containsControlCharacter(key) else {
            throw ProtocolError(
                .malformed,
                "instance key \"\(key)\" must be 1-200 bytes of UTF-8 without control characters"
            )
        }
    }

    /// Whether `text` holds a C0 or C1 control character (or DEL), by a scan of its UTF-8: C1
    /// controls, U+0080 to U+009F, are the two-byte sequences 0xC2 0x80 to 0xC2 0x9F.
    private static func containsControlCharacter(_ text: some StringProtocol) -> Bool {
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F || (previous == 0xC2 && (0x80...0x9F).contains(byte)) { return true }
            previous = byte
        }
        return false
    }

    /// Parses `flow/key`; the key may itself contain `/`.
    public init(parsing text: String) throws {
        guard let slash = text.firstIndex(of: "/") else {
            throw ProtocolError(.malformed, "address \"\(text)\" must be flowName/instanceKey, e.g. counter/room-42")
        }
        let flow = text[..<slash]
        try Self.validate(flow: flow, key: text[text.index(after: slash)...])
        // The text itself, not a string made again from its parts.
        description = text
        flowBytes = UInt8(flow.utf8.count)
    }

    /// The flow name of `text` when it is plainly a valid address: a flow name of a-z, 0-9, `-` and
    /// `_`, a slash, and a key of 1 to 200 printable ASCII bytes. `nil` says only "not plainly":
    /// ``init(parsing:)`` decides (and words the error). The check reads the UTF-8 in place and
    /// makes no string longer than a small one, for the hot paths that see an address per event.
    static func plainFlowName(of text: String) -> Substring? {
        var text = text
        let slash: Int? = text.withUTF8 { bytes in
            guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")), slash >= 1, slash <= 48 else { return nil }
            let keyLength = bytes.count - slash - 1
            guard keyLength >= 1, keyLength <= 200 else { return nil }
            for byte in bytes[..<slash] {
                guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                else { return nil }
            }
            for byte in bytes[(slash + 1)...] where byte < 0x20 || byte >= 0x7F { return nil }
            return slash
        }
        guard let slash else { return nil }
        return text[..<text.utf8.index(text.utf8.startIndex, offsetBy: slash)]
    }

    public static func < (lhs: Address, rhs: Address) -> Bool {
        lhs.description.utf8Precedes(rhs.description)
    }

    // The text determines the parts, so equality and hashing look at it alone.
    public static func == (lhs: Address, rhs: Address) -> Bool {
        lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }
}
