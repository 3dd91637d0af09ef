/// Encodes any `Encodable` value into a canonical byte string: equal values give equal bytes in
/// every process and every run.
///
/// `JSONEncoder` cannot promise that: a `Set`, or a `Dictionary` whose keys are not strings, encodes
/// in hash order, and Swift seeds hashing per process. The canonical form sorts keyed containers by
/// key and the elements of sets and dictionaries by their own canonical bytes, tags every value with
/// its kind, and normalises `-0.0` and NaN, so it depends on the value alone.
///
/// The byte layout (all integers little-endian):
///
/// | tag | value |
/// | --- | --- |
/// | `0` | nil |
/// | `1` / `2` | false / true |
/// | `3` | signed integer, 8 bytes |
/// | `4` | unsigned integer, 8 bytes |
/// | `5` | floating point, the 8-byte IEEE bit pattern of the `Double` value |
/// | `6` | string: byte count (8 bytes), UTF-8 |
/// | `7` | ordered list: count (8 bytes), elements |
/// | `8` | keyed container: count, then (key as a tag-6 string, value) sorted by key |
/// | `9` | set or dictionary: count, then the elements' canonical bytes, sorted |
@_spi(Benchmarks) public enum CanonicalEncoding {
    /// Returns the canonical bytes of `value`.
    public static func bytes(of value: some Encodable) throws -> [UInt8] {
        let slot = Slot()
        try encode(value, into: slot, codingPath: [])
        var out: [UInt8] = []
        slot.write(into: &out)
        return out
    }

    static func encode<T: Encodable>(_ value: T, into slot: Slot, codingPath: [any CodingKey]) throws {
        if let unordered = value as? any UnorderedEncodable {
            var elements = try unordered.canonicalElements(codingPath: codingPath)
            elements.sort { $0.lexicographicallyPrecedes($1) }
            slot.value = .unordered(elements)
        } else {
            try value.encode(to: Encoder(slot: slot, codingPath: codingPath))
        }
    }
}

/// Collections whose encoding order is not part of their value.
protocol UnorderedEncodable {
    func canonicalElements(codingPath: [any CodingKey]) throws -> [[UInt8]]
}

extension Set: UnorderedEncodable where Element: Encodable {
    func canonicalElements(codingPath: [any CodingKey]) throws -> [[UInt8]] {
        try map { try CanonicalEncoding.bytes(of: $0) }
    }
}

extension Dictionary: UnorderedEncodable where Key: Encodable, Value: Encodable {
    func canonicalElements(codingPath: [any CodingKey]) throws -> [[UInt8]] {
        try map { key, value in try CanonicalEncoding.bytes(of: key) + CanonicalEncoding.bytes(of: value) }
    }
}

extension CanonicalEncoding {
    /// One value in the tree being built. Containers hand out slots before they are filled, so
    /// slots are references.
    final class Slot {
        enum Value {
            case primitive([UInt8])
            case keyed(Keyed)
            case unkeyed(Unkeyed)
            case unordered([[UInt8]])
        }

        final class Keyed { var entries: [String: Slot] = [:] }
        final class Unkeyed { var elements: [Slot] = [] }

        var value: Value?

        func write(into out: inout [UInt8]) {
            switch value {
            case nil:
                out.append(Tag.null)
            case .primitive(let bytes):
                out.append(contentsOf: bytes)
            case .keyed(let keyed):
                out.append(Tag.keyed)
                out.appendCount(keyed.entries.count)
                for key in keyed.entries.keys.sorted(by: { $0.utf8Precedes($1) }) {
                    out.appendString(key)
                    keyed.entries[key]!.write(into: &out)
                }
            case .unkeyed(let unkeyed):
                out.append(Tag.list)
                out.appendCount(unkeyed.elements.count)
                for element in unkeyed.elements { element.write(into: &out) }
            case .unordered(let elements):
                out.append(Tag.unordered)
                out.appendCount(elements.count)
                for element in elements { out.append(contentsOf: element) }
            }
        }

        func keyed() -> Keyed {
            if case .keyed(let keyed) = value { return keyed }
            let keyed = Keyed()
            value = .keyed(keyed)
            return keyed
        }

        func unkeyed() -> Unkeyed {
            if case .unkeyed(let unkeyed) = value { return unkeyed }
            let unkeyed = Unkeyed()
            value = .unkeyed(unkeyed)
            return unkeyed
        }
    }

    enum Tag {
        static let null: UInt8 = 0
        static let `false`: UInt8 = 1
        static let `true`: UInt8 = 2
        static let signed: UInt8 = 3
        static let unsigned: UInt8 = 4
        static let float: UInt8 = 5
        static let string: UInt8 = 6
        static let list: UInt8 = 7
        static let keyed: UInt8 = 8
        static let unordered: UInt8 = 9
    }

    static func primitive(_ value: Bool) -> [UInt8] { [value ? Tag.true : Tag.false] }

    static func primitive(signed value: Int64) -> [UInt8] {
        var out = [Tag.signed]
        out.appendWord(UInt64(bitPattern: value))
        return out
    }

    static func primitive(unsigned value: UInt64) -> [UInt8] {
        var out = [Tag.unsigned]
        out.appendWord(value)
        return out
    }

    static func primitive(_ value: Double) -> [UInt8] {
        let normalised: Double = value.isNaN ? .nan : (value == 0 ? 0 : value)
        var out = [Tag.float]
        out.appendWord(normalised.bitPattern)
        return out
    }

    static func primitive(_ value: String) -> [UInt8] {
        var out: [UInt8] = []
        out.appendString(value)
        return out
    }
}

extension [UInt8] {
    fileprivate mutating func appendWord(_ word: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }

    fileprivate mutating func appendCount(_ count: Int) {
        appendWord(UInt64(count))
    }

    fileprivate mutating func appendString(_ string: String) {
        append(CanonicalEncoding.Tag.string)
        appendCount(string.utf8.count)
        append(contentsOf: string.utf8)
    }
}
