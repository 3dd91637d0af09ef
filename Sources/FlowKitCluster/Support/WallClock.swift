import Glibc

/// The wall clock, in microseconds since the Unix epoch: what entries and reports are stamped with,
/// so latencies can be measured across processes on one machine.
enum WallClock {
    static func micros() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
    }
}

/// A clock that only moves forward and keeps counting while the process is stopped or the machine
/// suspended (`CLOCK_BOOTTIME`), in microseconds: what lease deadlines are measured on, since the
/// election service's own clock does not stop either.
enum LeaseClock {
    static func micros() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
    }
}
