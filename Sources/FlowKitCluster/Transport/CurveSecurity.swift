import Foundation
import ZeroMQ

#if canImport(Glibc)
import Glibc
#endif


/// CURVE encryption and authentication for one process: its own key pair, and the client keys
/// its bound sockets admit.
///
/// With CURVE on, every socket is encrypted. Bound sockets are CURVE servers; a ZAP handler admits
/// only the public keys in the allow-list (without one, libzmq would admit any client that knows the
/// server's public key). Connecting sockets are CURVE clients of the server whose public key they
/// are given.
///
/// Key files hold Z85 text, one key per file (`flowkit keys` writes them). A secret key file that
/// others may read is refused: `chmod 600` it.
public struct CurveSecurity: Sendable {
    public var keyPair: CurveKeyPair
    /// Public keys of the clients this process's bound sockets admit.
    public var allowedClients: [CurveKey]
    /// Public keys of the nodes: the only ones a coordinator's submit socket admits (its ZAP
    /// domain is ``nodesDomain``), so only a node may say HELLO. `nil` for a node.
    public var allowedNodes: [CurveKey]?

    /// The ZAP domain of the sockets that admit only ``allowedNodes``.
    public static let nodesDomain = "flowkit-nodes"
    /// The ZAP domain of every other CURVE server socket.
    public static let clientsDomain = "flowkit"

    public init(keyPair: CurveKeyPair, allowedClients: [CurveKey], allowedNodes: [CurveKey]? = nil) {
        self.keyPair = keyPair
        self.allowedClients = allowedClients
        self.allowedNodes = allowedNodes
    }

    /// Loads a secret key file (deriving the public key) and allow-list files.
    ///
    /// - Parameters:
    ///   - secretKeyFile: A file with one Z85 secret key; its mode must not let others read it.
    ///   - allowListFile: Z85 public keys, one per line, optionally followed by whitespace and a
    ///     note; blank lines and lines starting with `#` are ignored.
    ///   - nodeAllowListFile: The same, of node keys (a coordinator's).
    public static func load(secretKeyFile: String, allowListFile: String?, nodeAllowListFile: String? = nil) throws -> CurveSecurity {
        let secret = try CurveKey(z85: try readSecretKeyFile(secretKeyFile), isSecret: true)
        let keyPair = try CurveKeyPair(secretKey: secret)
        let allowed = try allowListFile.map(readAllowList) ?? []
        return CurveSecurity(keyPair: keyPair, allowedClients: allowed, allowedNodes: try nodeAllowListFile.map(readAllowList))
    }

    /// Reads a public key: Z85 text given inline, or a file holding it.
    public static func publicKey(_ fileOrZ85: String) throws -> CurveKey {
        if fileOrZ85.count == CurveKey.z85Count, !FileManager.default.fileExists(atPath: fileOrZ85) {
            return try CurveKey(z85: fileOrZ85)
        }
        guard let text = try? String(contentsOfFile: fileOrZ85, encoding: .utf8) else {
            throw CurveSecurityError("cannot read the public key file \(fileOrZ85)")
        }
        return try CurveKey(z85: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func readSecretKeyFile(_ path: String) throws -> String {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw CurveSecurityError("cannot read the secret key file \(path): \(error.localizedDescription)")
        }
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
        if mode & 0o077 != 0 {
            throw CurveSecurityError(
                "the secret key file \(path) can be read by other users (mode \(String(mode & 0o777, radix: 8))); run: chmod 600 \(path)"
            )
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CurveSecurityError("cannot read the secret key file \(path)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func readAllowList(_ path: String) throws -> [CurveKey] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CurveSecurityError("cannot read the allow-list \(path)")
        }
        var keys: [CurveKey] = []
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // Z85 uses `#`, so a comment is a line that starts with it, or text after the key.
            let line = raw.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            let trimmed = String(line.prefix { !$0.isWhitespace })
            do {
                keys.append(try CurveKey(z85: trimmed))
            } catch {
                throw CurveSecurityError("\(path) line \(number + 1) is not a Z85 public key: \(error)")
            }
        }
        return keys
    }

    /// Writes a new key pair as `<name>.key` (secret, mode 0600) and `<name>.pub` in `directory`.
    ///
    /// - Returns: The key pair.
    @discardableResult
    public static func generate(name: String, directory: String) throws -> CurveKeyPair {
        let pair = try CurveKeyPair.generate()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let secretPath = directory + "/" + name + ".key"
        let fd = open(secretPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else {
            throw CurveSecurityError("cannot create \(secretPath): \(String(cString: strerror(errno)))")
        }
        let secret = Array((pair.secretKey.z85 + "\n").utf8)
        let written = secret.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, 0o600)
        close(fd)
        guard written == secret.count else { throw CurveSecurityError("cannot write \(secretPath)") }
        try (pair.publicKey.z85 + "\n").write(toFile: directory + "/" + name + ".pub", atomically: true, encoding: .utf8)
        return pair
    }
}

/// A key or key file that cannot be used.
public struct CurveSecurityError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
