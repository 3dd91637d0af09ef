import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Socket {
    /// Receives one whole multipart message.
    ///
    /// There is no fixed-size buffer: every frame, from 0 bytes up to `MAXMSGSIZE`, is
    /// received through a `zmq_msg_t` and copied once into its ``Frame``.
    /// - Parameter dontWait: When `true`, return `nil` at once if no message is ready.
    /// - Returns: The message, or `nil` if none is ready (`dontWait`, or `RCVTIMEO` expired).
    /// - Throws: ``ZMQError``: `ETERM`, `EFSM`, ``ZMQError/Code/socketClosed``.
    public func receive(dontWait: Bool = false) throws -> Message? {
        try receiveMessage(try open("zmq_msg_recv"), flags: dontWait ? ZMQ_DONTWAIT : 0)
    }

    /// Receives one frame and whether more frames of the same message follow.
    /// - Parameter dontWait: When `true`, return `nil` at once if nothing is ready.
    /// - Returns: The frame and its "more" flag, or `nil` if nothing is ready.
    /// - Throws: ``ZMQError`` as for ``receive(dontWait:)``.
    public func receiveFrame(dontWait: Bool = false) throws -> (frame: Frame, more: Bool)? {
        let socket = try open("zmq_msg_recv")
        return try receiveFrame(socket, flags: dontWait ? ZMQ_DONTWAIT : 0)
    }

    /// Receives without blocking until no message is ready or `limit` messages were taken.
    ///
    /// REQ and REP sockets stop after one message: they must send before reading again.
    /// Frames under 1 KiB share one buffer per call (see ``Frame``).
    /// - Parameters:
    ///   - messages: Where received messages are appended.
    ///   - limit: The most messages to take in this call.
    /// - Returns: How many messages were appended.
    /// - Throws: ``ZMQError`` as for ``receive(dontWait:)``; messages received before the
    ///   error are appended first.
    @discardableResult
    public func receiveAvailable(into messages: inout [Message], limit: Int) throws -> Int {
        // The handle is read once: every read of a class's `var` pays a dynamic
        // exclusivity check, which showed up at several percent of a receive.
        let socket = try open("zmq_msg_recv")
        let strict = type == .req || type == .rep
        var batch = ReceiveBatch(capacity: batchBytesHint)
        var received = 0
        defer {
            batchBytesHint = min(max(batch.sharedBytes, 256), 256 * 1024)
            batch.finish(into: &messages)
        }
        while received < limit {
            // REQ/REP must send before reading again; that EFSM just means "nothing more
            // to read now", so it is checked without building an error (every round trip).
            if received > 0, strict { break }
            guard try receiveInto(&batch, socket) else { break }
            received += 1
        }
        return received
    }

    /// Receives one whole message into `batch`; `false` if none is ready.
    private func receiveInto(_ batch: inout ReceiveBatch, _ socket: UnsafeMutableRawPointer) throws -> Bool {
        let message = receiveMessage
        var flags = ZMQ_DONTWAIT
        while true {
            while zmq_msg_recv(message, socket, flags) < 0 {
                let code = zmq_errno()
                if code == EINTR { continue }
                if code == EAGAIN, flags != 0 { return false }
                throw ZMQError(errno: code, operation: "zmq_msg_recv(\(type))")
            }
            let size = zmq_msg_size(message)
            let more = zmq_msg_more(message) != 0
            batch.add(UnsafeRawBufferPointer(start: zmq_msg_data(message), count: size), last: !more)
            if size > 256 {
                zmq_msg_close(message)
                zmq_msg_init(message)
            }
            // Frames of a message arrive together, so the rest never waits.
            guard more else { return true }
            flags = 0
        }
    }

    @inline(__always)
    private func receiveMessage(_ socket: UnsafeMutableRawPointer, flags: Int32) throws -> Message? {
        guard let (first, more) = try receiveFrame(socket, flags: flags) else { return nil }
        guard more else { return Message(first) }
        var frames = [first]
        var hasMore = true
        while hasMore {
            // Frames of a message arrive together, so the rest never waits.
            guard let (frame, next) = try receiveFrame(socket, flags: 0) else { break }
            frames.append(frame)
            hasMore = next
        }
        return Message(frames: frames)
    }

    @inline(__always)
    private func receiveFrame(_ socket: UnsafeMutableRawPointer, flags: Int32) throws -> (Frame, Bool)? {
        let message = receiveMessage
        while zmq_msg_recv(message, socket, flags) < 0 {
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return nil }
            throw ZMQError(errno: code, operation: "zmq_msg_recv(\(type))")
        }
        let size = zmq_msg_size(message)
        // Array(UnsafeBufferPointer) takes the stdlib's specialised copy path; building
        // the array with unsafeUninitializedCapacity costs a generic metadata lookup per
        // frame (measured at ~2x the time for 64-byte frames).
        let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: zmq_msg_data(message).assumingMemoryBound(to: UInt8.self), count: size))
        let more = zmq_msg_more(message) != 0
        if size > 256 {
            // Release libzmq's buffer now rather than at the next receive.
            zmq_msg_close(message)
            zmq_msg_init(message)
        }
        return (Frame(bytes), more)
    }
}
