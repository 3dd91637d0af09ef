/// A ZeroMQ multipart message: an ordered, non-empty-or-empty list of ``Frame``s.
///
/// `Message` is a value type and `Sendable`. It is a `RandomAccessCollection` of frames,
/// so `message[0]`, `message.count` and `for frame in message` all work. Single-frame
/// messages, the common case on hot paths, are stored without a second allocation.
///
/// ```swift
/// let request: Message = ["topic", "payload"]
/// let reply = Message(frames: [identity, .empty, Frame(bytes)])
/// ```
public struct Message: Sendable, Hashable {
    enum Storage: Sendable, Hashable {
        case one(Frame)
        case many([Frame])
    }

    var storage: Storage

    /// Creates a message from its frames, in order.
    /// - Parameter frames: The frames; a message with no frames sends nothing.
    public init(frames: [Frame]) {
        storage = frames.count == 1 ? .one(frames[0]) : .many(frames)
    }

    /// Creates a single-frame message.
    /// - Parameter frame: The only frame.
    public init(_ frame: Frame) {
        storage = .one(frame)
    }

    /// Creates a single-frame message holding `bytes`.
    /// - Parameter bytes: The frame contents.
    public init(_ bytes: [UInt8]) {
        storage = .one(Frame(bytes))
    }

    /// Creates a single-frame message holding the UTF-8 bytes of `string`.
    /// - Parameter string: The frame contents.
    public init(_ string: String) {
        storage = .one(Frame(string))
    }

    /// Creates a message with one frame per byte array.
    /// - Parameter parts: The frames' contents, in order.
    public init(parts: [[UInt8]]) {
        self.init(frames: parts.map(Frame.init))
    }

    /// Creates a message with one UTF-8 frame per string.
    /// - Parameter strings: The frames' contents, in order.
    public init(strings: [String]) {
        self.init(frames: strings.map { Frame($0) })
    }

    /// The frames as an array (allocates for single-frame messages; prefer indexing).
    public var frames: [Frame] {
        switch storage {
        case .one(let frame): return [frame]
        case .many(let frames): return frames
        }
    }

    /// The total number of payload bytes over all frames.
    public var byteCount: Int {
        switch storage {
        case .one(let frame): return frame.count
        case .many(let frames): return frames.reduce(0) { $0 + $1.count }
        }
    }

    /// Appends a frame at the end.
    /// - Parameter frame: The frame to add.
    public mutating func append(_ frame: Frame) {
        switch storage {
        case .one(let first): storage = .many([first, frame])
        case .many(var frames):
            storage = .many([])
            frames.append(frame)
            storage = frames.count == 1 ? .one(frames[0]) : .many(frames)
        }
    }
}

extension Message: RandomAccessCollection {
    public var startIndex: Int { 0 }

    public var endIndex: Int {
        switch storage {
        case .one: return 1
        case .many(let frames): return frames.count
        }
    }

    public subscript(position: Int) -> Frame {
        switch storage {
        case .one(let frame):
            precondition(position == 0, "Message frame index \(position) out of range 0..<1")
            return frame
        case .many(let frames):
            return frames[position]
        }
    }
}

extension Message: ExpressibleByArrayLiteral {
    /// Creates a message from literal frames, e.g. `["topic", "body"]`.
    public init(arrayLiteral elements: Frame...) {
        self.init(frames: elements)
    }
}

extension Message: CustomStringConvertible {
    public var description: String {
        "Message[" + map(\.description).joined(separator: ", ") + "]"
    }
}
