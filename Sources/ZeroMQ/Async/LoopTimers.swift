import Synchronization

/// The tasks sleeping on an I/O loop (``IOLoop/sleep(until:)``), earliest deadline first. Lives on
/// the loop's thread, in its ``LoopCore``.
struct LoopTimers {
    /// One task's sleep: its deadline, how late it may end, and whether its task was cancelled.
    /// The cancel handler marks it before it asks the loop to remove it, so a sleep whose cancel
    /// reaches the loop first is refused when it arrives, and a cancel that comes after the sleep
    /// ended leaves nothing behind.
    final class Sleep: Sendable {
        /// The sleep ends in the first turn of the loop at or after this.
        let deadline: ContinuousClock.Instant
        /// The loop wakes for it by then at the latest: `deadline` plus the tolerance.
        let latest: ContinuousClock.Instant
        private let cancelled = Atomic<Bool>(false)

        init(deadline: ContinuousClock.Instant, tolerance: Duration = .zero) {
            self.deadline = deadline
            self.latest = deadline + max(.zero, tolerance)
        }

        var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

        func markCancelled() {
            cancelled.store(true, ordering: .releasing)
        }
    }

    private struct Sleeper {
        var sleep: Sleep
        var continuation: UnsafeContinuation<Void, any Error>
    }

    /// Sorted by deadline; few at a time, so an array.
    private var sleepers: [Sleeper] = []

    /// When the loop must wake for a sleeper at the latest, if any task sleeps: the earliest of
    /// their deadlines plus tolerances. (A sleep whose deadline has passed ends in whichever turn
    /// comes first, woken for it or for anything else.)
    var nextDeadline: ContinuousClock.Instant? { sleepers.lazy.map(\.sleep.latest).min() }

    mutating func add(_ sleep: Sleep, continuation: UnsafeContinuation<Void, any Error>) {
        if sleep.isCancelled {
            continuation.resume(throwing: CancellationError())
            return
        }
        var low = 0
        var high = sleepers.count
        while low < high {
            let middle = (low + high) / 2
            if sleepers[middle].sleep.deadline <= sleep.deadline { low = middle + 1 } else { high = middle }
        }
        sleepers.insert(Sleeper(sleep: sleep, continuation: continuation), at: low)
    }

    /// Wakes `sleep` with a `CancellationError`, if it still sleeps.
    mutating func cancel(_ sleep: Sleep) {
        guard let index = sleepers.firstIndex(where: { $0.sleep === sleep }) else { return }
        sleepers.remove(at: index).continuation.resume(throwing: CancellationError())
    }

    /// Wakes every sleep whose deadline has passed; their tasks are queued on their executors.
    mutating func fire(now: ContinuousClock.Instant) {
        var due = 0
        while due < sleepers.count, sleepers[due].sleep.deadline <= now { due += 1 }
        guard due > 0 else { return }
        let woken = sleepers[..<due]
        sleepers.removeFirst(due)
        for sleeper in woken { sleeper.continuation.resume() }
    }

    /// Wakes every sleep with `error`: the loop stops.
    mutating func failAll(_ error: any Error) {
        let all = sleepers
        sleepers.removeAll()
        for sleeper in all { sleeper.continuation.resume(throwing: error) }
    }
}
