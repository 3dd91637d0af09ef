import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Socket {
    /// Sends a multipart message (every frame but the last with `ZMQ_SNDMORE`).
    ///
    /// libzmq delivers multipart messages atomically: a peer gets all frames or none.
    /// - Parameters:
    ///   - message: The frames to send; an empty message sends nothing.
    ///   - dontWait: When `true`, return `false` instead of blocking at the high-water mark.
    /// - Returns: `true` when queued, `false` when `dontWait` and the socket would block
    ///   (nothing was sent).
    /// - Throws: ``ZMQError``: `EHOSTUNREACH` (ROUTER_MANDATORY), `EFSM` (REQ/REP order),
    ///   `ETERM`, ``ZMQError/Code/socketClosed``.
    @discardableResult
    public func send(_ message: Message, dontWait: Bool = false) throws -> Bool {
        switch try send(message, from: 0, dontWait: dontWait) {
        case .complete:
            return true
        case .wouldBlock(0):
            return false
        case .wouldBlock(let next):
            // libzmq counts HWM in whole messages, so later frames of an accepted message
            // do not block in practice; finish the message rather than tear it.
            _ = try send(message, from: next, dontWait: false)
            return true
        }
    }

    /// Sends one frame, optionally announcing that more frames of the same message follow.
    /// - Parameters:
    ///   - frame: The frame.
    ///   - more: Whether another frame of the same message follows (`ZMQ_SNDMORE`).
    ///   - dontWait: When `true`, return `false` instead of blocking.
    /// - Returns: `false` when `dontWait` and the socket would block.
    /// - Throws: ``ZMQError`` as for ``send(_:dontWait:)``.
    @discardableResult
    public func send(_ frame: Frame, more: Bool, dontWait: Bool = false) throws -> Bool {
        let socket = try open("zmq_msg_send")
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        while true {
            let code = Socket.sendFrame(frame, socket: socket, flags: flags)
            if code == 0 { return true }
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw ZMQError(errno: code, operation: "zmq_msg_send(\(type))")
        }
    }

    /// How far a possibly partial send got.
    enum SendProgress: Equatable {
        case complete
        /// The frame at this index would block; frames before it were accepted.
        case wouldBlock(Int)
    }

    /// Sends the frames of `message` from index `first`. Used by the I/O loop to resume a
    /// message after `EAGAIN` without re-sending frames libzmq already took.
    func send(_ message: Message, from first: Int, dontWait: Bool) throws -> SendProgress {
        try send(message, from: first, dontWait: dontWait, socket: try open("zmq_msg_send"))
    }

    /// As ``send(_:from:dontWait:)`` with the handle already read (for batch loops).
    @inline(__always)
    func send(_ message: Message, from first: Int, dontWait: Bool, socket: UnsafeMutableRawPointer) throws -> SendProgress {
        let last = message.count - 1
        guard first <= last else { return .complete }
        let wait = dontWait ? ZMQ_DONTWAIT : 0
        var index = first
        while index <= last {
            let flags = wait | (index < last ? ZMQ_SNDMORE : 0)
            let code = Socket.sendFrame(message[index], socket: socket, flags: flags)
            if code == 0 {
                index += 1
            } else if code == EINTR {
                continue
            } else if code == EAGAIN {
                return .wouldBlock(index)
            } else {
                throw ZMQError(errno: code, operation: "zmq_msg_send(\(type), frame \(index) of \(last + 1))")
            }
        }
        return .complete
    }

    /// Sends one frame; returns `0` or the `errno` value.
    @inline(__always)
    static func sendFrame(_ frame: Frame, socket: UnsafeMutableRawPointer, flags: Int32) -> Int32 {
        if frame.count < Frame.zeroCopyThreshold {
            // zmq_send copies into a fresh zmq_msg_t: for small frames that is the cheapest path.
            let rc = frame.withUnsafeBytes { zmq_send(socket, $0.baseAddress, $0.count, flags) }
            return rc < 0 ? zmq_errno() : 0
        }
        return sendWithoutCopy(frame, socket: socket, flags: flags)
    }

    /// Hands a large frame's storage to libzmq, which calls back to release it.
    private static func sendWithoutCopy(_ frame: Frame, socket: UnsafeMutableRawPointer, flags: Int32) -> Int32 {
        let owner = FrameOwner(frame.bytesView)
        let base = owner.baseAddress
        let hint = Unmanaged.passRetained(owner).toOpaque()
        var message = zmq_msg_t()
        let rc = zmq_msg_init_data(&message, base, frame.count, { _, hint in
            Unmanaged<FrameOwner>.fromOpaque(hint!).release()
        }, hint)
        guard rc == 0 else {
            let code = zmq_errno()
            Unmanaged<FrameOwner>.fromOpaque(hint).release()
            return code
        }
        if zmq_msg_send(&message, socket, flags) >= 0 { return 0 }
        let code = zmq_errno()
        zmq_msg_close(&message)  // runs the free callback, releasing the owner
        return code
    }
}

/// Keeps a frame's bytes alive while libzmq holds a pointer to them.
///
/// The slice is a `let` that nothing can mutate, so its native contiguous storage is never
/// reallocated or written while this object lives; the pointer stays valid until libzmq's
/// free callback releases the object on one of its I/O threads.
private final class FrameOwner {
    let bytes: ArraySlice<UInt8>
    let baseAddress: UnsafeMutableRawPointer

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        baseAddress = UnsafeMutableRawPointer(mutating: bytes.withUnsafeBytes { $0.baseAddress! })
    }
}
