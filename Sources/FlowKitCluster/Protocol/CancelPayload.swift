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
