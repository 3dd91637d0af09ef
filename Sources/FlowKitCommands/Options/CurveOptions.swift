import ArgumentParser
import FlowKitCluster
import ZeroMQ

/// CURVE for a process that binds (coordinator, node): its secret key and whom it admits.
package struct CurveServerOptions: ParsableArguments {
    package init() {}

    @Option(help: "Turn CURVE on with this secret key file (Z85, mode 600; see 'flowkit keys').")
    package var curveSecret: String?

    @Option(help: "With CURVE: the public keys (one per line) allowed to connect. Everyone else is refused.")
    package var curveAllow: String?

    /// - Parameter allowNodes: A coordinator's `--curve-allow-nodes` (required with CURVE); `nil`
    ///   for a node.
    package func security(settings: Settings, section: String, allowNodes: String?? = .none) throws -> CurveSecurity? {
        guard let secret = settings.string(section, "curve-secret", flag: curveSecret) else { return nil }
        let allow = settings.string(section, "curve-allow", flag: curveAllow)
        guard allow != nil else {
            throw ValidationError("--curve-secret needs --curve-allow: a CURVE server must say whose keys it admits")
        }
        var nodes: String?
        if case .some(let flag) = allowNodes {
            nodes = settings.string(section, "curve-allow-nodes", flag: flag)
            guard nodes != nil else {
                throw ValidationError(
                    "--curve-secret needs --curve-allow-nodes on a coordinator: the node keys that may say HELLO (its submit socket admits no other key)"
                )
            }
        }
        return try CurveSecurity.load(secretKeyFile: secret, allowListFile: allow, nodeAllowListFile: nodes)
    }
}

/// CURVE for a process that connects (clients, monitors): its key and the server's public key.
package struct CurveClientOptions: ParsableArguments {
    package init() {}

    @Option(help: "Connect with CURVE using this secret key file.")
    package var curveSecret: String?

    @Option(help: "With CURVE: the server's public key (a .pub file or Z85 text).")
    package var serverKey: String?

    /// The transport and server key: from the flags, else from the local cluster's file.
    package func resolve(localCluster: LocalClusterFile?, serverPublicKey: (LocalClusterFile) -> String?) throws -> (TransportOptions, CurveKey?) {
        if let curveSecret {
            var transport = TransportOptions()
            transport.curve = try CurveSecurity.load(secretKeyFile: curveSecret, allowListFile: nil)
            guard let serverKey else { throw ValidationError("--curve-secret needs --server-key, the server's public key") }
            return (transport, try CurveSecurity.publicKey(serverKey))
        }
        return try Self.resolve(localCluster: localCluster, serverPublicKey: serverPublicKey)
    }

    /// The transport and server key a local cluster's file calls for (plain text without CURVE).
    package static func resolve(localCluster: LocalClusterFile?, serverPublicKey: (LocalClusterFile) -> String?) throws -> (TransportOptions, CurveKey?) {
        var transport = TransportOptions()
        if let file = localCluster, let curve = file.curve, let key = serverPublicKey(file) {
            transport.curve = try CurveSecurity.load(secretKeyFile: curve.clientSecretKey, allowListFile: nil)
            return (transport, try CurveKey(z85: key))
        }
        return (transport, nil)
    }
}
