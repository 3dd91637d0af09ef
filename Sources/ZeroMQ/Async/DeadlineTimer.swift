import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes an I/O loop at its earliest deadline through a descriptor it polls, so the poll itself
/// never carries a timeout.
///
/// A poll with a timeout arms a kernel timer when it sleeps and cancels it when a socket wakes it
/// first: on a virtual machine, each is a write to the timer device and an exit to the hypervisor.
/// Measured here (`Benchmarks/hop-cost.c`, a C echo server paced at 2,000 round trips a second):
/// a `poll` with a 100 ms timeout before each read cost the echo side 50–68 µs of CPU per message,
/// one without a timeout 18–20 µs. A loop that wakes thousands of times a second for messages
/// and once in a while for a deadline should pay for the deadline, not for every message. This
/// timer is armed only when a deadline earlier than the one it holds comes up, and otherwise left
/// alone: a heartbeat tick costs one arming per tick, whatever the traffic.
final class DeadlineTimer {
    /// The timer's descriptor, polled with `POLLIN`.
    let fileDescriptor: Int32
    /// When the timer fires, if it is armed and has not been cleared since.
    private(set) var armedFor: ContinuousClock.Instant?

    /// A timer, or `nil` where the system has none (then the loop polls with a timeout).
    init?() {
        #if os(Linux)
        let fd = flowkit_timerfd_create()
        guard fd >= 0 else { return nil }
        fileDescriptor = fd
        #else
        return nil
        #endif
    }

    /// Makes sure the timer fires no later than `deadline`; an earlier arming is kept (the loop
    /// wakes early then, and asks again). A deadline already past fires at once.
    func arm(atLatest deadline: ContinuousClock.Instant, now: ContinuousClock.Instant) {
        if let armedFor, armedFor <= deadline { return }
        #if os(Linux)
        let delay = deadline - now
        let nanoseconds = max(1, delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000)
        guard flowkit_timerfd_arm(fileDescriptor, nanoseconds) == 0 else { return }
        armedFor = deadline
        #endif
    }

    /// Clears an expiry the poll reported (`revents` of the timer's entry), so the descriptor
    /// stops being readable.
    func clear(revents: Int16) {
        guard revents != 0 else { return }
        var expirations: UInt64 = 0
        while read(fileDescriptor, &expirations, MemoryLayout<UInt64>.size) < 0, errno == EINTR {}
        armedFor = nil
    }

    deinit {
        _ = close(fileDescriptor)
    }
}
