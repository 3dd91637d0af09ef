/// The 64 bytes that open every ZMTP 3 connection, sent by both sides at once: the signature
/// (`0xFF`, 8 padding bytes, `0x7F`), the version, the security mechanism and the role.
struct ZMTPGreeting: Hashable, Sendable {
    static let size = 64
    /// The first ten bytes; a peer is ZMTP 2+ when byte 0 is `0xFF` and byte 9 has bit 0 set.
    static let signatureSize = 10

    var major: UInt8 = 3
    var minor: UInt8 = 1
    /// The mechanism's name, at most 20 ASCII bytes: `NULL`, `PLAIN` or `CURVE`.
    var mechanism = "NULL"
    /// Whether this side is the server of the mechanism's handshake (meaningless for NULL).
    var asServer = false

    init(minor: UInt8 = 1, mechanism: String = "NULL", asServer: Bool = false) {
        self.minor = minor
        self.mechanism = mechanism
        self.asServer = asServer
    }

    /// Reads a peer's greeting; `bytes` holds exactly ``size`` bytes.
    init(parsing bytes: some Collection<UInt8>) throws(ZMTPError) {
        let bytes = Array(bytes)
        guard bytes.count == Self.size, bytes[0] == 0xFF, bytes[9] & 1 == 1 else {
            throw ZMTPError(.notZMTP, "the peer's first bytes are not a ZMTP greeting")
        }
        guard bytes[10] >= 3 else {
            throw ZMTPError(.unsupportedVersion, "the peer speaks ZMTP \(bytes[10]).x; this engine speaks 3.x")
        }
        major = bytes[10]
        minor = bytes[11]
        let name = bytes[12..<32].prefix { $0 != 0 }
        mechanism = String(decoding: name, as: UTF8.self)
        asServer = bytes[32] != 0
    }

    var encoded: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        bytes[0] = 0xFF
        bytes[9] = 0x7F
        bytes[10] = major
        bytes[11] = minor
        for (offset, byte) in mechanism.utf8.prefix(20).enumerated() { bytes[12 + offset] = byte }
        bytes[32] = asServer ? 1 : 0
        return bytes
    }
}

extension SocketType {
    /// The type named in a READY command's `Socket-Type` property, e.g. `"DEALER"`.
    init?(zmtpName: some Collection<UInt8>) {
        let name = String(decoding: zmtpName, as: UTF8.self)
        guard let type = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = type
    }

    /// The socket types a peer of this type may have (RFC 37's "compatible socket types").
    var compatiblePeers: [SocketType] {
        switch self {
        case .dealer: [.rep, .dealer, .router]
        case .router: [.req, .dealer, .router]
        case .req: [.rep, .router]
        case .rep: [.req, .dealer]
        case .pub, .xpub: [.sub, .xsub]
        case .sub, .xsub: [.pub, .xpub]
        case .push: [.pull]
        case .pull: [.push]
        case .pair: [.pair]
        default: []
        }
    }

    /// Whether the READY command carries an `Identity` property (the peer's routing id).
    var sendsIdentity: Bool { self == .req || self == .dealer || self == .router }
}
