import CZeroMQ

/// Z85 text encoding (ZeroMQ RFC 32), used for printable CURVE keys.
///
/// Every 4 bytes become 5 printable characters, so a 32-byte key is 40 characters.
public enum Z85 {
    /// Encodes bytes as Z85 text.
    /// - Parameter bytes: Data whose length is a multiple of 4.
    /// - Returns: The Z85 text, `bytes.count / 4 * 5` characters long.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/invalidArgument`` for a length that is
    ///   not a multiple of 4.
    public static func encode(_ bytes: [UInt8]) throws -> String {
        guard bytes.count % 4 == 0 else {
            throw ZMQError(
                .invalidArgument,
                message: "Z85 encodes whole 4-byte groups; got \(bytes.count) bytes (pad to \((bytes.count + 3) / 4 * 4))",
                operation: "zmq_z85_encode"
            )
        }
        if bytes.isEmpty { return "" }
        var output = [CChar](repeating: 0, count: bytes.count / 4 * 5 + 1)
        let ok = bytes.withUnsafeBufferPointer { input in
            zmq_z85_encode(&output, input.baseAddress, input.count) != nil
        }
        guard ok else { throw ZMQError.last("zmq_z85_encode") }
        return String(decoding: output.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Decodes Z85 text.
    /// - Parameter text: Z85 text whose length is a multiple of 5.
    /// - Returns: The decoded bytes, `text.count / 5 * 4` long.
    /// - Throws: ``ZMQError`` with ``ZMQError/Code/invalidArgument`` for a bad length or a
    ///   character outside the Z85 alphabet.
    public static func decode(_ text: String) throws -> [UInt8] {
        let utf8 = Array(text.utf8)
        guard utf8.count % 5 == 0 else {
            throw ZMQError(
                .invalidArgument,
                message: "Z85 text must be a multiple of 5 characters; got \(utf8.count)",
                operation: "zmq_z85_decode"
            )
        }
        if let bad = utf8.firstIndex(where: { !isAlphabet($0) }) {
            throw ZMQError(
                .invalidArgument,
                message: "character at offset \(bad) (byte 0x\(String(utf8[bad], radix: 16))) is not in the Z85 alphabet",
                operation: "zmq_z85_decode"
            )
        }
        if utf8.isEmpty { return [] }
        var output = [UInt8](repeating: 0, count: utf8.count / 5 * 4)
        let ok = (utf8.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer { input in
            zmq_z85_decode(&output, input.baseAddress) != nil
        }
        guard ok else {
            throw ZMQError(.invalidArgument, message: "libzmq rejected the Z85 text", operation: "zmq_z85_decode")
        }
        return output
    }

    /// The 85 characters of the Z85 alphabet.
    static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    private static let alphabetSet: Set<UInt8> = Set(alphabet)

    private static func isAlphabet(_ byte: UInt8) -> Bool { alphabetSet.contains(byte) }
}
