import FlowKitCore

/// What a cancel by id (entry kind 2) names, and so which effects it stops on every replica.
///
/// One process tells `A.CancelID.timer`, `B.CancelID.timer` and the string `"timer"` apart: a
/// `CancelID` compares type and value. A flow's own cancel, reached inside running work, goes
/// through the order and must mean the same on every node, so it carries both: the id's type, by
/// `CancelID.typeName`, and its description. An operator's cancel (`flowkit cancel`, the
/// dashboard, ``ClusterClient/cancel(at:id:wait:)``) names an id as a person reads it, by its text
/// alone, and stops every effect whose id reads so, whatever its type.
public enum CancelTarget: Hashable, Sendable, CustomStringConvertible {
    /// Every effect whose id's description is this text (codec 1: the text as UTF-8).
    case described(String)
    /// Every effect whose id has this type and description (codec 2: the type as a short-string,
    /// then the description as UTF-8 to the end).
    case typed(type: String, description: String)

    /// The target that stops exactly the effects marked with `id`.
    public init(_ id: CancelID) {
        self = .typed(type: id.typeName, description: id.description)
    }

    /// Reads a kind 2 entry's payload, by the rules every wall checks.
    ///
    /// - Throws: ``ProtocolError``: `unsupportedCodec` for a codec other than 1 or 2, `malformed`
    ///   for an empty or invalid part, `oversize` for a part beyond 65,535 bytes.
    public init(codec: PayloadCodec, payload: [UInt8]) throws {
        switch codec {
        case .json:
            self = .described(try CancelPayload.cancelID(payload))
        case .binary:
            var reader = ByteReader(payload, context: "a typed cancel id")
            let type = try reader.readShortBytes("type")
            guard !type.isEmpty, let typeName = String(validating: type, as: UTF8.self) else {
                throw ProtocolError(.malformed, "a typed cancel id (codec 2) names its type: 1 to 65,535 bytes of UTF-8")
            }
            self = .typed(type: typeName, description: try CancelPayload.cancelID(reader.readRest()))
        }
    }

    /// The entry's codec: 1 for an id by text, 2 for one by type and text.
    public var codec: PayloadCodec {
        switch self {
        case .described: .json
        case .typed: .binary
        }
    }

    /// The entry's payload.
    public var payload: [UInt8] {
        switch self {
        case .described(let text):
            return Array(text.utf8)
        case .typed(let type, let description):
            var writer = ByteWriter(capacity: type.utf8.count + description.utf8.count + 2)
            writer.writeShortString(type)
            writer.write(contentsOf: description.utf8)
            return writer.bytes
        }
    }

    /// Whether an effect marked with `id` stops.
    public func matches(_ id: CancelID) -> Bool {
        switch self {
        case .described(let text): id.description == text
        case .typed(let type, let description): id.description == description && id.typeName == type
        }
    }

    /// Whether the work marked with the typed id `marked` (``init(_:)``) stops.
    func matches(_ marked: CancelTarget) -> Bool {
        switch (self, marked) {
        case (.described(let text), .typed(_, let description)): text == description
        default: self == marked
        }
    }

    /// `timer`, or `timer (MyApp.TimerFlow.CancelID)` for a typed id.
    public var description: String {
        switch self {
        case .described(let text): text
        case .typed(let type, let description): "\(description) (\(type))"
        }
    }
}

/// The rules for a cancel's payload, the same at every wall: a CANCEL's `id` at a node and a kind 2
/// or 3 payload in a SUBMIT at the coordinator.
enum CancelPayload {
    /// A cancel of every effect names no id: `all` = 1 at a node, kind 3 at the coordinator.
    static func checkCancelAll(_ bytes: [UInt8]) throws {
        guard bytes.isEmpty else {
            throw ProtocolError(.malformed, "a cancel of every effect (all = 1, kind 3) names no cancel id; got \(bytes.count) bytes of one")
        }
    }

    /// The text of a cancel id: 1 to 65,535 bytes of UTF-8.
    static func cancelID(_ bytes: [UInt8]) throws -> String {
        guard !bytes.isEmpty else {
            throw ProtocolError(.malformed, "a cancel by id (kind 2) needs a cancel id; to cancel every effect, use all = 1 (kind 3)")
        }
        guard bytes.count <= maxCancelIDBytes else {
            throw ProtocolError(.oversize, "the cancel id is \(bytes.count) bytes; cancel ids are at most \(maxCancelIDBytes) bytes")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ProtocolError(.malformed, "the cancel id is not valid UTF-8")
        }
        return text
    }

    /// The longest cancel id, in bytes of UTF-8.
    static let maxCancelIDBytes = Int(UInt16.max)
}
