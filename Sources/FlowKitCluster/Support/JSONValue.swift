import Foundation

/// Any JSON value, for JSON whose shape no Swift type names: a user's event payload or state as
/// the monitor and `flowkit state` print them, a config file, a request to etcd's JSON gateway.
/// It is read and written with the same Codable coders as every other JSON FlowKit handles, so
/// FlowKit builds JSON one way.
package enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number without a fraction that fits 64 bits, kept exactly (a seq, a lease id).
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .integer(let integer): try container.encode(integer)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }

    /// Parses JSON text (a bare scalar included).
    package init(parsing bytes: some Collection<UInt8>) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// A value encoded by its Codable conformance, as JSON would carry it.
    package init(encoding value: some Encodable) throws {
        self = try JSONValue(parsing: JSONEncoder().encode(value))
    }

    /// An integer of any width: exact while it fits 64 signed bits.
    package static func int(_ value: some BinaryInteger) -> JSONValue {
        Int64(exactly: value).map(JSONValue.integer) ?? .number(Double(value))
    }

    /// The value as JSON text, keys sorted, slashes unescaped; indented when `pretty`.
    package func text(pretty: Bool = false) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "null"
    }

    /// The value as a command-line flag would spell it; `nil` for objects and null.
    package var flagText: String? {
        switch self {
        case .string(let string): string
        case .integer(let integer): String(integer)
        case .number(let number): number.rounded() == number && abs(number) < 1e18 ? String(Int64(number)) : String(number)
        case .bool(let bool): String(bool)
        case .array(let values): values.compactMap(\.flagText).joined(separator: ",")
        case .object, .null: nil
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int64) { self = .integer(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
