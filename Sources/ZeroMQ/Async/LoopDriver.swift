import CZeroMQ

/// One socket served by a ``LoopCore``: what to poll for, and what to do when ready.
///
/// Drivers live on the loop thread only, like the ``Socket`` each one owns.
protocol LoopDriver: AnyObject {
    /// The socket polled for this driver.
    var socket: Socket { get }
    /// The socket's `ZMQ_FD`, read once: libzmq signals it when commands arrive.
    var fileDescriptor: Int32 { get }
    /// Identifies this driver's registration of ``fileDescriptor`` (``PollToken``).
    var pollToken: UInt32 { get }
    /// Whether the last call on the socket was a non-blocking receive that found nothing.
    /// libzmq then processed its pending commands and drained `ZMQ_FD`, so until that fd
    /// fires again the socket cannot have become readable: the loop may sleep on the fd
    /// without asking `ZMQ_EVENTS` first (one syscall less per turn).
    var isQuiescent: Bool { get }
    /// Whether the driver is done; the loop then drops it.
    var isFinished: Bool { get }
    /// The `ZMQ_POLLIN`/`ZMQ_POLLOUT` flags to poll for in the next turn.
    func interest(now: ContinuousClock.Instant) -> Int16
    /// When the driver wants a turn even if nothing is ready (a send retry), if ever.
    var deadline: ContinuousClock.Instant? { get }
    /// Handles readiness (`revents` may be 0: the turn came from a wakeup).
    /// - Returns: `true` if work is left that should run without waiting for `zmq_poll`.
    func service(revents: Int16, now: ContinuousClock.Instant) -> Bool
    /// Closes the socket and fails or finishes whatever waits on it.
    func close(linger: Duration?, reason: ZMQError)
}

/// Serves a socket whose messages are handled right on the loop thread: ZAP requests and
/// monitor events. `handle` is called for each message until it returns `false`.
final class HandlerDriver: LoopDriver {
    let socket: Socket
    /// Identifies the owner (a ``ZAPHandler``, a monitor) so it can close the driver later.
    let owner: ObjectIdentifier
    private let handle: (Message, Socket) -> Bool
    private let onClose: () -> Void
    let fileDescriptor: Int32
    let pollToken = PollToken.next()
    private(set) var isFinished = false
    private(set) var isQuiescent = false

    init(socket: Socket, owner: ObjectIdentifier, handle: @escaping (Message, Socket) -> Bool, onClose: @escaping () -> Void) {
        self.socket = socket
        self.fileDescriptor = (try? socket.fileDescriptor()) ?? -1
        self.owner = owner
        self.handle = handle
        self.onClose = onClose
    }

    var deadline: ContinuousClock.Instant? { nil }

    func interest(now: ContinuousClock.Instant) -> Int16 { Int16(ZMQ_POLLIN) }

    func service(revents: Int16, now: ContinuousClock.Instant) -> Bool {
        guard revents & Int16(ZMQ_POLLIN) != 0 else { return false }
        for _ in 0..<64 {
            let message: Message?
            do {
                message = try socket.receive(dontWait: true)
            } catch let error as ZMQError {
                close(linger: .zero, reason: error)
                return false
            } catch {
                return false
            }
            guard let message else {
                isQuiescent = true
                return false
            }
            isQuiescent = false
            if !handle(message, socket) {
                close(linger: .zero, reason: .closed("handler finished"))
                return false
            }
        }
        return true
    }

    func close(linger: Duration?, reason: ZMQError) {
        guard !isFinished else { return }
        isFinished = true
        socket.close(linger: linger ?? .zero)
        onClose()
    }
}
