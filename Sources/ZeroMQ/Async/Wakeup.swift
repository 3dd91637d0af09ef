import CZeroMQ
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes an I/O loop blocked in `zmq_poll`: an `eventfd` polled as a raw fd item.
///
/// Signals are coalesced: only the first signal after the loop last reset writes to the
/// fd, so a burst of sends costs one syscall per loop turn, not one per message. A signal
/// from the loop thread itself (a task running on the loop as its executor) only sets a
/// flag: the loop checks it before it polls again.
final class Wakeup: Sendable {
    /// The eventfd, polled by the loop with `POLLIN`.
    let fileDescriptor: Int32
    private let pending = Atomic<Bool>(false)
    private let loopThread = Atomic<UInt>(0)
    private let localPending = Atomic<Bool>(false)

    init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else {
            throw ZMQError(errno: errno, operation: "eventfd")
        }
        fileDescriptor = fd
    }

    /// Records the calling thread as the loop thread.
    func adoptCurrentThread() {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
    }

    /// Whether the caller is the loop thread.
    var isLoopThread: Bool {
        loopThread.load(ordering: .relaxed) == UInt(pthread_self())
    }

    /// Makes the loop's next (or current) `zmq_poll` return. Safe from any thread.
    func signal() {
        if isLoopThread {
            localPending.store(true, ordering: .relaxed)
            return
        }
        guard !pending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var one: UInt64 = 1
        while write(fileDescriptor, &one, MemoryLayout<UInt64>.size) < 0 && errno == EINTR {}
    }

    /// Clears the signal; the loop calls this before it looks at queued work, so any work
    /// queued afterwards signals again. The acquiring exchange makes that work visible.
    func reset() {
        var value: UInt64 = 0
        while read(fileDescriptor, &value, MemoryLayout<UInt64>.size) < 0 && errno == EINTR {}
        _ = pending.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Whether a signal from another thread is pending (no syscall: reads the flag).
    var isSignalled: Bool {
        pending.load(ordering: .acquiring)
    }

    /// Takes the flag set by signals from the loop thread itself.
    func takeLocalSignal() -> Bool {
        localPending.exchange(false, ordering: .relaxed)
    }

    deinit {
        // Closed only when nothing can signal any more: closing earlier could make a late
        // signal write into whatever file reused the descriptor number.
        _ = Glibc.close(fileDescriptor)
    }
}
