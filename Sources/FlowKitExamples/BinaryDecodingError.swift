/// Bytes that are not a valid binary encoding of an event.
public struct BinaryDecodingError: Error, CustomStringConvertible {
    public var type: String
    public var bytes: Int

    public init(type: String, bytes: Int) {
        self.type = type
        self.bytes = bytes
    }

    public var description: String { "\(bytes) bytes are not a binary \(type)" }
}
