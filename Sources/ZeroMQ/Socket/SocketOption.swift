import CZeroMQ

/// A typed socket option: the `ZMQ_*` constant plus the Swift type of its value.
///
/// Use the static members, which document each option, with ``Socket/setOption(_:_:)``
/// and ``Socket/option(_:)``:
///
/// ```swift
/// try socket.setOption(.sendHighWaterMark, 10_000)
/// try socket.setOption(.linger, .milliseconds(0))
/// let hwm = try socket.option(.receiveHighWaterMark)
/// ```
///
/// Options marked *before bind/connect* only affect connections made after they are set.
/// Options marked *write-only* throw `EINVAL` from ``Socket/option(_:)``.
public struct SocketOption<Value: SocketOptionValue>: Sendable, CustomStringConvertible {
    /// The `ZMQ_*` constant.
    public let rawValue: Int32
    /// The option's libzmq name, e.g. `"ZMQ_SNDHWM"`.
    public let name: String

    /// Creates an option for a `ZMQ_*` constant not listed here.
    /// - Parameters:
    ///   - rawValue: The `ZMQ_*` constant.
    ///   - name: Its name, used in error messages.
    public init(rawValue: Int32, name: String) {
        self.rawValue = rawValue
        self.name = name
    }

    public var description: String { name }
}

/// A Swift type that can be stored in a socket option.
public protocol SocketOptionValue: Sendable {
    /// Writes `value` with `zmq_setsockopt`; returns libzmq's result (`0` or `-1`).
    static func store(_ value: Self, socket: UnsafeMutableRawPointer, option: Int32) -> Int32
    /// Reads the option with `zmq_getsockopt`, or returns `nil` after libzmq failed.
    static func load(socket: UnsafeMutableRawPointer, option: Int32) -> Self?
}

extension Int32: SocketOptionValue {
    public static func store(_ value: Int32, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        var value = value
        return zmq_setsockopt(socket, option, &value, MemoryLayout<Int32>.size)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> Int32? {
        var value: Int32 = 0
        var size = MemoryLayout<Int32>.size
        return zmq_getsockopt(socket, option, &value, &size) == 0 ? value : nil
    }
}

extension Int64: SocketOptionValue {
    public static func store(_ value: Int64, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        var value = value
        return zmq_setsockopt(socket, option, &value, MemoryLayout<Int64>.size)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> Int64? {
        var value: Int64 = 0
        var size = MemoryLayout<Int64>.size
        return zmq_getsockopt(socket, option, &value, &size) == 0 ? value : nil
    }
}

extension Bool: SocketOptionValue {
    public static func store(_ value: Bool, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        Int32.store(value ? 1 : 0, socket: socket, option: option)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> Bool? {
        Int32.load(socket: socket, option: option).map { $0 != 0 }
    }
}

/// Durations are stored as whole milliseconds (`int`), the unit of libzmq's time options.
extension Duration: SocketOptionValue {
    public static func store(_ value: Duration, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        Int32.store(Int32(clamping: value.milliseconds), socket: socket, option: option)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> Duration? {
        Int32.load(socket: socket, option: option).map { .milliseconds($0) }
    }
}

/// Binary options (routing ids, subscription prefixes) of any length, including zero.
extension Array: SocketOptionValue where Element == UInt8 {
    public static func store(_ value: [UInt8], socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        value.withUnsafeBytes { zmq_setsockopt(socket, option, $0.baseAddress, $0.count) }
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 256)
        var size = buffer.count
        guard zmq_getsockopt(socket, option, &buffer, &size) == 0 else { return nil }
        return Array(buffer.prefix(size))
    }
}

/// Text options; libzmq returns them NUL-terminated, which is stripped.
extension String: SocketOptionValue {
    public static func store(_ value: String, socket: UnsafeMutableRawPointer, option: Int32) -> Int32 {
        [UInt8].store(Array(value.utf8), socket: socket, option: option)
    }

    public static func load(socket: UnsafeMutableRawPointer, option: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 1024)
        var size = buffer.count
        guard zmq_getsockopt(socket, option, &buffer, &size) == 0 else { return nil }
        let text = buffer.prefix(size).prefix { $0 != 0 }
        return String(decoding: text, as: UTF8.self)
    }
}
