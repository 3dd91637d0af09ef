/// How a CURVE server socket is set up.
public struct CurveServerOptions: Sendable {
    /// The server's long-term key pair; clients must know its public key.
    public var keyPair: CurveKeyPair
    /// The ZAP domain sent to the ``ZAPHandler`` with each authentication request.
    public var zapDomain: String

    /// - Parameters:
    ///   - keyPair: The server's key pair.
    ///   - zapDomain: The ZAP domain for this socket's authentication requests.
    public init(keyPair: CurveKeyPair, zapDomain: String = "flowkit") {
        self.keyPair = keyPair
        self.zapDomain = zapDomain
    }
}

/// How a CURVE client socket is set up.
public struct CurveClientOptions: Sendable {
    /// The client's long-term key pair; the server's allow-list must hold its public key.
    public var keyPair: CurveKeyPair
    /// The public key of the server to connect to.
    public var serverPublicKey: CurveKey

    /// - Parameters:
    ///   - keyPair: The client's key pair.
    ///   - serverPublicKey: The server's public key.
    public init(keyPair: CurveKeyPair, serverPublicKey: CurveKey) {
        self.keyPair = keyPair
        self.serverPublicKey = serverPublicKey
    }
}

extension Socket {
    /// Makes this socket a CURVE server. Call before ``bind(_:)``.
    ///
    /// Without a ``ZAPHandler`` on the same context, libzmq admits **any** client that
    /// knows the server's public key; start one to enforce an allow-list.
    /// - Parameter options: The server key pair and ZAP domain.
    /// - Throws: ``ZMQError`` (`EINVAL` if libzmq lacks CURVE).
    public func configureCurveServer(_ options: CurveServerOptions) throws {
        try setOption(.zapDomain, options.zapDomain)
        try setOption(.curveServer, true)
        try setOption(.curveSecretKey, options.keyPair.secretKey)
    }

    /// Makes this socket a CURVE client of a given server. Call before ``connect(_:)``.
    /// - Parameter options: The client key pair and the server's public key.
    /// - Throws: ``ZMQError`` (`EINVAL` if libzmq lacks CURVE).
    public func configureCurveClient(_ options: CurveClientOptions) throws {
        try setOption(.curveServerKey, options.serverPublicKey)
        try setOption(.curvePublicKey, options.keyPair.publicKey)
        try setOption(.curveSecretKey, options.keyPair.secretKey)
    }
}
