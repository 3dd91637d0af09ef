import CZeroMQ

/// A 32-byte CURVE key (public or secret), available as raw bytes and as Z85 text.
///
/// Secret keys print as `<secret>` so they do not leak into logs.
public struct CurveKey: Sendable, Hashable, CustomStringConvertible {
    /// The key length in bytes.
    public static let byteCount = 32
    /// The key length in Z85 characters.
    public static let z85Count = 40

    /// The 32 raw key bytes.
    public let bytes: [UInt8]
    /// Whether this is a secret key (affects ``description`` only).
    public let isSecret: Bool

    /// Creates a key from 32 raw bytes.
    /// - Parameters:
    ///   - bytes: Exactly 32 bytes.
    ///   - isSecret: Whether the key is secret (hidden in ``description``).
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/invalidArgument`` for another length.
    public init(bytes: [UInt8], isSecret: Bool = false) throws {
        guard bytes.count == CurveKey.byteCount else {
            throw ZMQError(
                .invalidArgument,
                message: "a CURVE key is 32 bytes; got \(bytes.count)",
                operation: "CurveKey(bytes:)"
            )
        }
        self.bytes = bytes
        self.isSecret = isSecret
    }

    /// Creates a key from its 40-character Z85 text.
    /// - Parameters:
    ///   - z85: The Z85 text, e.g. from a config file or ``CurveKeyPair/generate()``.
    ///   - isSecret: Whether the key is secret (hidden in ``description``).
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/invalidArgument`` for the wrong length
    ///   or characters outside the Z85 alphabet.
    public init(z85: String, isSecret: Bool = false) throws {
        let count = z85.utf8.count
        guard count == CurveKey.z85Count else {
            throw ZMQError(
                .invalidArgument,
                message: "a Z85 CURVE key is 40 characters; got \(count)",
                operation: "CurveKey(z85:)"
            )
        }
        try self.init(bytes: Z85.decode(z85), isSecret: isSecret)
    }

    /// The key as 40 characters of Z85 text.
    public var z85: String {
        // 32 bytes is a multiple of 4, so encoding cannot fail.
        (try? Z85.encode(bytes)) ?? ""
    }

    public var description: String {
        isSecret ? "<secret>" : z85
    }
}

extension CurveKey: SocketOptionValue {
    public static func store(_ value: CurveKey, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        [UInt8].store(value.bytes, socket: socket, option: option)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> CurveKey? {
        var buffer = [UInt8](repeating: 0, count: CurveKey.byteCount)
        var size = buffer.count
        guard zmq_getsockopt(socket, option, &buffer, &size) == 0 else { return nil }
        return try? CurveKey(bytes: buffer, isSecret: option == ZMQ_CURVE_SECRETKEY)
    }
}
