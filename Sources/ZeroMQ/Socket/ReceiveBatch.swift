/// Collects the frames of one batch receive, copying small frames into one shared buffer.
///
/// The buffer is only appended to while the batch is built; the frames are sliced out of
/// it in ``finish(into:)``, once it can no longer change (slicing earlier would make the
/// next append copy the whole buffer).
struct ReceiveBatch {
    /// Frames at least this large get a buffer of their own.
    static let ownBufferThreshold = 1024

    private enum Pending {
        case shared(start: Int, end: Int, last: Bool)
        case own([UInt8], last: Bool)
    }

    private var buffer: [UInt8] = []
    private var pending: [Pending] = []

    /// Bytes used in the shared buffer so far.
    var sharedBytes: Int { buffer.count }

    /// - Parameter capacity: The expected bytes of small frames (sizes the buffer once).
    init(capacity: Int) {
        buffer.reserveCapacity(capacity)
    }

    /// Copies one received frame in.
    /// - Parameters:
    ///   - bytes: The frame's bytes (valid only during the call).
    ///   - last: Whether this frame ends its message.
    mutating func add(_ bytes: UnsafeRawBufferPointer, last: Bool) {
        if bytes.count >= ReceiveBatch.ownBufferThreshold {
            pending.append(.own(Array(bytes.bindMemory(to: UInt8.self)), last: last))
        } else {
            let start = buffer.count
            buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
            pending.append(.shared(start: start, end: buffer.count, last: last))
        }
    }

    /// Turns the collected frames into messages, in order, and appends them.
    mutating func finish(into messages: inout [Message]) {
        let shared = buffer
        buffer = []
        var frames: [Frame] = []
        for entry in pending {
            let frame: Frame
            let last: Bool
            switch entry {
            case .shared(let start, let end, let isLast):
                frame = Frame(shared[start..<end])
                last = isLast
            case .own(let bytes, let isLast):
                frame = Frame(bytes)
                last = isLast
            }
            if last, frames.isEmpty {
                messages.append(Message(frame))
            } else if last {
                frames.append(frame)
                messages.append(Message(frames: frames))
                frames.removeAll()
            } else {
                frames.append(frame)
            }
        }
        pending.removeAll()
    }
}
