/// The process that runs some of an instance's effects: a node, and its process's session (a
/// restarted node is a new owner, and owns nothing its previous process did).
public struct EffectOwner: Hashable, Sendable, Codable, CustomStringConvertible {
    public var node: UInt32
    public var session: UInt64

    public init(node: UInt32, session: UInt64) {
        self.node = node
        self.session = session
    }

    public var description: String { "node \(node) (session \(String(session, radix: 16)))" }
}

/// What a takeover entry (``EntryKind/takeover``) says: the effects of its instance that `from`
/// ran move to `to`, which starts what the flow's `resume(_:)` derives from the state.
///
/// Payload (codec 2): `from-node:u32 from-session:u64 to-node:u32 to-session:u64`.
@_spi(Wire) public struct Takeover: Sendable, Equatable {
    public var from: EffectOwner
    public var to: EffectOwner

    public init(from: EffectOwner, to: EffectOwner) {
        self.from = from
        self.to = to
    }

    static let size = 24

    public var payload: [UInt8] {
        var writer = ByteWriter(capacity: Self.size)
        writer.write(from.node)
        writer.write(from.session)
        writer.write(to.node)
        writer.write(to.session)
        return writer.bytes
    }

    public init(payload: [UInt8]) throws {
        guard payload.count == Self.size else {
            throw ProtocolError(.malformed, "a takeover's payload is \(Self.size) bytes; got \(payload.count)")
        }
        var reader = ByteReader(payload, context: "a takeover")
        from = EffectOwner(node: try reader.readUInt32("from node"), session: try reader.readUInt64("from session"))
        to = EffectOwner(node: try reader.readUInt32("to node"), session: try reader.readUInt64("to session"))
    }
}
