import Dependencies
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The event being reduced, as far as a reducer's dependencies need to know it: in a cluster, the
/// ordered entry (the same on every replica); in one process, the store's count of events and when
/// the event arrived.
///
/// While a reducer runs, `uuid`, `date`, `withRandomNumberGenerator`, `continuousClock` and
/// `suspendingClock` (once `DependencyValues.deriveReducerValuesFromEntries()` installed them,
/// which every ``FlowStore``, test store and cluster replica does) give values derived from the
/// stamp alone: every replica that reduces the entry draws the same UUIDs and random numbers and
/// reads the same time, the entry's commit time. In effects, which run once, they give what they
/// gave before (the live values, or a test's).
public struct EntryStamp: Sendable, Hashable {
    /// The entry's seq (a store's count of events).
    public var seq: UInt64
    /// The term that ordered it (0 in one process).
    public var epoch: UInt32
    /// When it was committed (when the store received the event), µs since the Unix epoch.
    public var committedAt: UInt64

    public init(seq: UInt64, epoch: UInt32, committedAt: UInt64) {
        self.seq = seq
        self.epoch = epoch
        self.committedAt = committedAt
    }

    /// The time the stamp names.
    public var date: Date { Date(timeIntervalSince1970: Double(committedAt) / 1_000_000) }
}

/// The draws of one reduced entry: a SplitMix64 stream seeded from its stamp, so the n-th draw is
/// the same on every replica. One per flow instance, reset for each entry (no allocation per entry).
package final class EntryEntropy {
    private(set) var stamp = EntryStamp(seq: 0, epoch: 0, committedAt: 0)
    private var state: UInt64 = 0

    package init() {}

    package func reset(_ stamp: EntryStamp) {
        self.stamp = stamp
        state = Self.mix(stamp.seq) ^ Self.mix(UInt64(stamp.epoch) &+ 0x9E37_79B9_7F4A_7C15) ^ Self.mix(stamp.committedAt &+ 0xD1B5_4A32_D192_ED03)
    }

    package func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// A version-4, variant-1 UUID from two draws.
    package func uuid() -> UUID {
        let high = next(), low = next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
        }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The entry the reducer running on this thread reduces, if one does. A thread-local, not a task-
/// local: effect tasks started while an entry is reduced must not inherit it (they run once, with
/// live values).
package enum ReducingEntry {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// The entropy of the entry being reduced on this thread.
    package static var current: EntryEntropy? {
        pthread_getspecific(key).map { Unmanaged<EntryEntropy>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` (a reducer) with `entropy` as this thread's entry.
    package static func with<Result>(_ entropy: EntryEntropy, _ body: () throws -> Result) rethrows -> Result {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(entropy).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try body()
    }
}

extension DependencyValues {
    /// Makes `uuid`, `date`, `withRandomNumberGenerator`, `continuousClock` and `suspendingClock`
    /// derive from the entry being reduced while a reducer runs (``EntryStamp``), and give what
    /// they gave before everywhere else (effects). Every ``FlowStore``, test store and cluster
    /// replica installs this before the dependencies its owner sets, so an explicit override (a
    /// test's `$0.uuid = .incrementing`, a registration's) still wins.
    public mutating func deriveReducerValuesFromEntries() {
        let uuid = self.uuid
        self.uuid = UUIDGenerator { ReducingEntry.current?.uuid() ?? uuid() }
        let date = self.date
        self.date = DateGenerator { ReducingEntry.current?.stamp.date ?? date.now }
        self.withRandomNumberGenerator = WithRandomNumberGenerator(EntryAwareGenerator(outside: self.withRandomNumberGenerator))
        self.continuousClock = EntryAwareClock(outside: self.continuousClock)
        self.suspendingClock = EntryAwareClock(outside: self.suspendingClock)
    }
}

/// A random number generator that draws from the reduced entry's stream inside a reducer, and from
/// the generator it replaced elsewhere.
struct EntryAwareGenerator: RandomNumberGenerator, Sendable {
    let outside: WithRandomNumberGenerator

    mutating func next() -> UInt64 {
        if let entry = ReducingEntry.current { return entry.next() }
        return outside { generator in generator.next() }
    }
}

/// A clock whose `now`, inside a reducer, is the reduced entry's commit time, and elsewhere the
/// clock it replaced, on the same scale (time since the Unix epoch); it sleeps on the clock it
/// replaced.
struct EntryAwareClock: Clock, Sendable {
    struct Instant: InstantProtocol, Sendable {
        /// Time since the Unix epoch.
        var offset: Duration

        func advanced(by duration: Duration) -> Self { Self(offset: offset + duration) }
        func duration(to other: Self) -> Duration { other.offset - offset }
        static func < (lhs: Self, rhs: Self) -> Bool { lhs.offset < rhs.offset }
    }

    let outside: any Clock<Duration>
    /// The replaced clock's time since first asked, plus the wall time then.
    private let outsideNow: @Sendable () -> Duration

    init(outside: any Clock<Duration>) {
        self.outside = outside
        self.outsideNow = Self.anchored(outside)
    }

    /// Anchored lazily: a test's clock (unimplemented until a test sets one) is not read unless an
    /// effect reads the time.
    private static func anchored<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let anchor = Mutex<(origin: C.Instant, wall: Duration)?>(nil)
        return {
            let start = anchor.withLock { anchor in
                if let anchor { return anchor }
                let start = (origin: clock.now, wall: Duration.nanoseconds(Int64(Date().timeIntervalSince1970 * 1_000_000_000)))
                anchor = start
                return start
            }
            return start.wall + start.origin.duration(to: clock.now)
        }
    }

    var now: Instant {
        if let entry = ReducingEntry.current { return Instant(offset: .microseconds(Int64(entry.stamp.committedAt))) }
        return Instant(offset: outsideNow())
    }

    var minimumResolution: Duration { outside.minimumResolution }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await outside.sleep(for: now.duration(to: deadline), tolerance: tolerance)
    }
}
