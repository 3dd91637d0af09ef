/// Microseconds of background work a kind of it may spend now: a token bucket refilled at
/// 1/``share`` of the time that passes, holding at most ``burst``.
///
/// Two kinds have one each (``DigestBook``). Periodic digests: at most 5 % of a thread, 50 ms at
/// once; a process with large or many changing instances (a ledger of every id) would otherwise
/// spend its time rehashing them every report; instead the digests lag, and catch up once the load
/// stops. (A bucket of a second let a replaying node spend a third of its replay hashing.) Putting
/// instances to rest: at most 10 % of a thread; a million populated instances went to rest a minute
/// later back to back, every process's background thread busy for tens of seconds at once.
struct HashingBudget {
    /// The budget grows by a µs every `share` µs that pass.
    let share: UInt64
    /// The most it holds (µs).
    let burst: Int64
    private var allowance: Int64
    private var lastRefill: UInt64 = 0
    /// What one item charged has cost lately (µs, a moving average): a guess until something is
    /// charged (a counter's state hashed on a slow core).
    private(set) var microsPerItem = 10.0

    init(share: UInt64, burst: Int64) {
        self.share = share
        self.burst = burst
        allowance = burst
    }

    /// The periodic digests' budget: 5 % of a thread.
    static func digests() -> HashingBudget { HashingBudget(share: 20, burst: 50_000) }

    /// The budget for putting instances to rest: 10 % of a thread.
    static func resting() -> HashingBudget { HashingBudget(share: 10, burst: 50_000) }

    /// Whether any is left.
    var hasRoom: Bool { allowance > 0 }

    /// When some will be left again (µs, after `now`, which the last refill was at).
    func roomAt(now: UInt64) -> UInt64 {
        hasRoom ? now : now + UInt64(1 - allowance) * share
    }

    /// Refills it for the time since the last refill.
    mutating func refill(now: UInt64) {
        guard lastRefill != 0, now > lastRefill else {
            lastRefill = now
            return
        }
        // What a refill does not make a whole µs of carries over: refills a few µs apart would lose it.
        let gained = (now - lastRefill) / share
        allowance = min(allowance + Int64(gained), burst)
        lastRefill += gained * share
    }

    /// Charges `micros` spent on `items` items (0: not counted in ``microsPerItem``).
    mutating func charge(_ micros: UInt64, items: Int = 0) {
        allowance -= Int64(micros)
        if items > 0 { microsPerItem += (Double(micros) / Double(items) - microsPerItem) / 8 }
    }

    /// Whether `count` items are expected to take at most `micros`, at the cost they had lately;
    /// one always fits.
    func fits(_ count: Int, within micros: UInt64) -> Bool {
        count <= 1 || Double(count) * microsPerItem <= Double(micros)
    }
}
