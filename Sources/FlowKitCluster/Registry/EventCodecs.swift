import FlowKitCore
import Foundation

/// How one flow's events are encoded, captured once at registration.
struct EventCodecs<Event: Codable & Sendable>: Sendable {
    let wire: PayloadCodec
    private let encodeBinary: (@Sendable (Event) -> [UInt8])?
    private let decodeBinary: (@Sendable ([UInt8]) throws -> Event)?

    init(wire: PayloadCodec) {
        self.wire = wire
        if let binaryType = Event.self as? any BinaryEventCodable.Type {
            (encodeBinary, decodeBinary) = Self.binaryCoders(binaryType)
        } else {
            encodeBinary = nil
            decodeBinary = nil
        }
    }

    /// The coders of an event type that is `Binary`, found once. `Binary` is `Event` itself (the
    /// cast above found it), so a value of one is read as the other in place rather than cast: a
    /// cast through `any BinaryEventCodable` per event looked the types up at run time each time.
    private static func binaryCoders<Binary: BinaryEventCodable>(
        _: Binary.Type
    ) -> (@Sendable (Event) -> [UInt8], @Sendable ([UInt8]) throws -> Event) {
        precondition(Binary.self == Event.self, "the binary coders of \(Event.self) must be its own")
        return (
            { event in withUnsafePointer(to: event) { $0.withMemoryRebound(to: Binary.self, capacity: 1) { $0.pointee.binaryEncoded() } } },
            { bytes in
                let event = try Binary(binaryEncoded: bytes)
                return withUnsafePointer(to: event) { $0.withMemoryRebound(to: Event.self, capacity: 1) { $0.pointee } }
            }
        )
    }

    var supportsBinary: Bool { decodeBinary != nil }

    func decode(_ payload: [UInt8], codec: PayloadCodec) throws -> Event {
        do {
            switch codec {
            case .json:
                return try JSONDecoder().decode(Event.self, from: Data(payload))
            case .binary:
                guard let decodeBinary else {
                    throw ProtocolError(.unsupportedCodec, "\(Event.self) has no binary encoding; send JSON (codec 1)")
                }
                return try decodeBinary(payload)
            }
        } catch let error as ProtocolError {
            throw error
        } catch {
            let reason = codec == .json ? Self.describeJSON(payload, error) : Self.describe(error)
            throw ProtocolError(.undecodableEvent, "the \(codec) payload does not decode as \(String(reflecting: Event.self)) (\(reason))")
        }
    }

    func encode(_ event: Event) -> [UInt8] {
        if wire == .binary, let encodeBinary { return encodeBinary(event) }
        // A Codable event of plain values always encodes.
        return (try? Array(JSONEncoder().encode(event))) ?? []
    }

    /// Why a JSON payload is not an event, in the terms of the encoding Swift synthesizes for an
    /// enum: an object with one key, the case's name. Foundation's own words for an unknown case
    /// ("Invalid number of keys found, expected one") puzzle anyone who sent one key.
    static func describeJSON(_ payload: [UInt8], _ error: any Error) -> String {
        let atTop: Bool = switch error as? DecodingError {
        case .typeMismatch(_, let context)?, .dataCorrupted(let context)?, .keyNotFound(_, let context)?, .valueNotFound(_, let context)?:
            context.codingPath.isEmpty
        default:
            false
        }
        guard atTop, case .object(let object)? = try? JSONValue(parsing: payload) else {
            return describe(error)
        }
        switch object.count {
        case 1: return "no event case named \"\(object.keys.first!)\""
        case 0: return "an event is a JSON object with one key, its case name; this object has none"
        default:
            let keys = object.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            return "an event is a JSON object with one key, its case name; this object has \(object.count): \(keys)"
        }
    }

    /// A decoding error in a sentence, with the path to the bad field.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.debugDescription + path(context)
        @unknown default:
            return "\(error)"
        }
    }
}
