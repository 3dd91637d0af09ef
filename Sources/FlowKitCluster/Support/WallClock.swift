import Glibc

/// The wall clock, in microseconds since the Unix epoch: what entries and reports are stamped with,
/// so latencies can be measured across processes on one machine.
enum WallClock {
    static func micros() -> UInt64 { clockMicros(CLOCK_REALTIME) }
}

/// A clock that only moves forward and keeps counting while the process is stopped or the machine
/// suspended (`CLOCK_BOOTTIME`), in microseconds: what lease deadlines are measured on, since the
/// election service's own clock does not stop either.
enum LeaseClock {
    static func micros() -> UInt64 { clockMicros(CLOCK_BOOTTIME) }
}

/// The calling thread's CPU time, in microseconds (`CLOCK_THREAD_CPUTIME_ID`): what work charged to
/// a budget of CPU costs, without the time its thread waited for a core. The background thread runs
/// at nice 19, and on a busy machine its wall time is mostly waiting.
enum ThreadCPUClock {
    static func micros() -> UInt64 { clockMicros(CLOCK_THREAD_CPUTIME_ID) }
}

private func clockMicros(_ clock: clockid_t) -> UInt64 {
    var time = timespec()
    clock_gettime(clock, &time)
    return UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
}
