/// What a socket's configure closure may do, whichever engine carries the socket: set options,
/// bind, connect, subscribe. ``Socket`` (libzmq) and FlowKit's own ZMTP engine both conform, so
/// code that only needs these calls works with either (see ``IOLoop/open(_:engine:configuration:_:)``).
public protocol SocketSetup: AnyObject {
    /// The socket's pattern.
    var type: SocketType { get }
    func setOption<Value>(_ option: SocketOption<Value>, _ value: Value) throws
    /// Binds and returns the endpoint bound (with the port the system chose for `*`).
    @discardableResult func bind(_ endpoint: String) throws -> String
    func connect(_ endpoint: String) throws
    func disconnect(_ endpoint: String) throws
    func subscribe(bytes prefix: [UInt8]) throws
    func unsubscribe(bytes prefix: [UInt8]) throws
}

extension SocketSetup {
    public func subscribe(_ prefix: String) throws { try subscribe(bytes: Array(prefix.utf8)) }
    public func unsubscribe(_ prefix: String) throws { try unsubscribe(bytes: Array(prefix.utf8)) }
}

/// Which implementation of ZMTP carries a socket.
public enum SocketEngine: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// libzmq: every transport and mechanism (CURVE), with its own I/O thread per context.
    case libzmq
    /// FlowKit's engine: TCP and the NULL mechanism, read and written on the ``IOLoop``'s own
    /// thread, so a message crosses no thread between the application and the kernel.
    case native

    public var description: String { rawValue }
}

extension Socket: SocketSetup {}
