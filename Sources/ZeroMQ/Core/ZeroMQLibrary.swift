import CZeroMQ

/// Facts about the libzmq library this process is linked against.
public enum ZeroMQLibrary {
    /// The libzmq version, e.g. `(4, 3, 4)`.
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }

    /// Whether libzmq was built with a capability (`zmq_has`), e.g. `"curve"`, `"ipc"`.
    /// - Parameter capability: One of libzmq's capability names.
    /// - Returns: `true` if available.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) != 0
    }

    /// Whether CURVE security is available (libsodium or tweetnacl built in).
    public static var hasCurve: Bool { has("curve") }
}

/// Wraps a value that is only touched in ways known to be thread-safe (raw libzmq handles
/// whose functions are documented as thread-safe, such as the context pointer).
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
