import CZeroMQ

/// A CURVE key pair: a public key to share and a secret key to keep.
///
/// ```swift
/// let server = try CurveKeyPair.generate()
/// print(server.publicKey.z85)     // give this to clients
/// let again = try CurveKeyPair(secretKey: server.secretKey)  // derive the public key
/// ```
public struct CurveKeyPair: Sendable, Hashable {
    /// The public key, safe to distribute.
    public let publicKey: CurveKey
    /// The secret key; never log or send it.
    public let secretKey: CurveKey

    /// Generates a fresh key pair with `zmq_curve_keypair`.
    /// - Returns: The new pair.
    /// - Throws: ``ZMQError`` with `ENOTSUP` if libzmq was built without CURVE.
    public static func generate() throws -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: CurveKey.z85Count + 1)
        var secretText = [CChar](repeating: 0, count: CurveKey.z85Count + 1)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else {
            throw ZMQError.last("zmq_curve_keypair")
        }
        return try CurveKeyPair(
            publicKey: CurveKey(z85: text(publicText)),
            secretKey: CurveKey(z85: text(secretText), isSecret: true)
        )
    }

    /// Rebuilds a pair from its secret key, deriving the public key with `zmq_curve_public`.
    /// - Parameter secretKey: The secret key.
    /// - Throws: ``ZMQError`` if libzmq cannot derive the key (no CURVE support).
    public init(secretKey: CurveKey) throws {
        var publicText = [CChar](repeating: 0, count: CurveKey.z85Count + 1)
        var secretText = (secretKey.z85.utf8.map { CChar(bitPattern: $0) }) + [0]
        guard zmq_curve_public(&publicText, &secretText) == 0 else {
            throw ZMQError.last("zmq_curve_public")
        }
        self.publicKey = try CurveKey(z85: CurveKeyPair.text(publicText))
        self.secretKey = try CurveKey(bytes: secretKey.bytes, isSecret: true)
    }

    /// Creates a pair from both keys as given (no check that they belong together).
    /// - Parameters:
    ///   - publicKey: The public key.
    ///   - secretKey: The matching secret key.
    public init(publicKey: CurveKey, secretKey: CurveKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
