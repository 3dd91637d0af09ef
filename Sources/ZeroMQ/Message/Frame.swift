#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One frame (part) of a ZeroMQ message: an immutable run of bytes of any length.
///
/// Received frames are copied once out of libzmq's `zmq_msg_t` into Swift-owned storage:
/// the `zmq_msg_t` is closed at once on the I/O thread (so libzmq's buffers are never
/// pinned by slow consumers), and the frame is then a plain `Sendable` value with no
/// lifetime rules. One `memcpy` is small next to the socket read it follows.
///
/// Small frames received in one batch by an ``IOLoop`` share one buffer (``bytesView`` is a
/// slice of it): one allocation per batch instead of one per frame, which measured ~20%
/// of the per-message CPU. A frame kept for long keeps that buffer (a few KiB) alive; copy
/// it with ``bytes`` to store it compactly. Frames of 1 KiB and more get their own buffer.
///
/// Sending does not copy large frames: from ``Frame/zeroCopyThreshold`` bytes up the
/// frame's storage is handed to `zmq_msg_init_data` and kept alive until libzmq's free
/// callback releases it.
public struct Frame: Sendable, Hashable, CustomStringConvertible {
    /// Frames at least this large are sent without copying (smaller ones are copied,
    /// which is cheaper than the bookkeeping for a zero-copy handoff).
    public static let zeroCopyThreshold = 32 * 1024

    /// The frame's bytes without copying.
    public let bytesView: ArraySlice<UInt8>

    /// The frame's bytes as an array: free when the frame owns its whole buffer (frames
    /// you make, large received frames), a copy for frames sharing a batch buffer.
    public var bytes: [UInt8] { Array(bytesView) }

    /// Creates a frame holding `bytes` (no copy: arrays are copy-on-write).
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: [UInt8]) {
        self.bytesView = bytes[...]
    }

    /// Creates a frame over a slice of bytes (no copy).
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytesView = bytes
    }

    /// Creates a frame from any byte sequence.
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: some Sequence<UInt8>) {
        self.bytesView = Array(bytes)[...]
    }

    /// Creates a frame holding the UTF-8 encoding of `string` (no terminating NUL).
    /// - Parameter string: The text to send.
    public init(_ string: String) {
        self.bytesView = Array(string.utf8)[...]
    }

    /// An empty frame (zero bytes), e.g. the delimiter in a REQ/REP envelope.
    public static let empty = Frame([UInt8]())

    /// The number of bytes in the frame.
    public var count: Int { bytesView.count }

    /// Whether the frame holds no bytes.
    public var isEmpty: Bool { bytesView.isEmpty }

    /// Calls `body` with a pointer to the frame's bytes.
    /// - Parameter body: A closure that reads the bytes; the pointer is valid only inside it.
    /// - Returns: Whatever `body` returns.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let result: Swift.Result<Result, Failure> = bytesView.withUnsafeBytes { buffer in
            do throws(Failure) {
                return .success(try body(buffer))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Frames are equal when their bytes are (compared with `memcmp`).
    public static func == (lhs: Frame, rhs: Frame) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    /// The frame decoded as UTF-8, or `nil` if it is not valid UTF-8.
    public var string: String? {
        String(validating: bytesView, as: UTF8.self)
    }

    /// Shows short frames as text when printable, else the length and leading hex bytes.
    public var description: String {
        if count <= 64, let text = string, text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
            return "\"\(text)\""
        }
        let hex = bytesView.prefix(16).map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
        return "<\(count) bytes: \(hex)\(count > 16 ? "…" : "")>"
    }
}

extension Frame: ExpressibleByStringLiteral {
    /// Creates a frame from a string literal, encoded as UTF-8.
    public init(stringLiteral value: String) {
        self.init(value)
    }
}

extension Frame: ExpressibleByArrayLiteral {
    /// Creates a frame from a literal list of bytes.
    public init(arrayLiteral elements: UInt8...) {
        self.init(elements)
    }
}
