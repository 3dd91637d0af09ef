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
