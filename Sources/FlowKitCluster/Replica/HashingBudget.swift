/// Microseconds of hashing periodic digests may spend now: a token bucket refilled at 1/20 of the
/// time that passes (at most 5 % of a thread), holding at most 50 ms. A process with large or many
/// changing instances (a ledger of every id) would otherwise spend its time rehashing them every
/// report; instead the digests lag, and catch up once the load stops. (A bucket of a second let a
/// replaying node spend a third of its replay hashing.)
struct HashingBudget {
    static let share: UInt64 = 20
    static let burst: Int64 = 50_000
    private var allowance: Int64 = HashingBudget.burst
    private var lastRefill: UInt64 = 0

    /// Whether any is left.
    var hasRoom: Bool { allowance > 0 }

    /// Refills it for the time since the last refill.
    mutating func refill(now: UInt64) {
        if lastRefill != 0, now > lastRefill {
            allowance = min(allowance + Int64((now - lastRefill) / Self.share), Self.burst)
        }
        lastRefill = now
    }

    mutating func charge(_ micros: UInt64) {
        allowance -= Int64(micros)
    }
}
