/// One frame (part) of a ZeroMQ message: an immutable run of bytes of any length.
///
/// Received frames are copied once out of libzmq's `zmq_msg_t` into a Swift `[UInt8]`:
/// the `zmq_msg_t` is closed at once on the I/O thread (so libzmq's decoder buffers are
/// never pinned by slow consumers), and the frame is then a plain `Sendable` value with
/// no lifetime rules. One `memcpy` is small next to the socket read it follows.
///
/// Sending does not copy large frames: from ``Frame/zeroCopyThreshold`` bytes up the
/// frame's storage is handed to `zmq_msg_init_data` and kept alive until libzmq's free
/// callback releases it.
public struct Frame: Sendable, Hashable, CustomStringConvertible {
    /// Frames at least this large are sent without copying (smaller ones are copied,
    /// which is cheaper than the bookkeeping for a zero-copy handoff).
    public static let zeroCopyThreshold = 32 * 1024

    /// The frame's bytes.
    public let bytes: [UInt8]

    /// Creates a frame holding `bytes` (no copy: arrays are copy-on-write).
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Creates a frame from any byte sequence.
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: some Sequence<UInt8>) {
        self.bytes = Array(bytes)
    }

    /// Creates a frame holding the UTF-8 encoding of `string` (no terminating NUL).
    /// - Parameter string: The text to send.
    public init(_ string: String) {
        self.bytes = Array(string.utf8)
    }

    /// An empty frame (zero bytes), e.g. the delimiter in a REQ/REP envelope.
    public static let empty = Frame([UInt8]())

    /// The number of bytes in the frame.
    public var count: Int { bytes.count }

    /// Whether the frame holds no bytes.
    public var isEmpty: Bool { bytes.isEmpty }

    /// Calls `body` with a pointer to the frame's bytes.
    /// - Parameter body: A closure that reads the bytes; the pointer is valid only inside it.
    /// - Returns: Whatever `body` returns.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let result: Swift.Result<Result, Failure> = bytes.withUnsafeBytes { buffer in
            do throws(Failure) {
                return .success(try body(buffer))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The frame decoded as UTF-8, or `nil` if it is not valid UTF-8.
    public var string: String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// Shows short frames as text when printable, else the length and leading hex bytes.
    public var description: String {
        if count <= 64, let text = string, text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
            return "\"\(text)\""
        }
        let hex = bytes.prefix(16).map { byte in
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
