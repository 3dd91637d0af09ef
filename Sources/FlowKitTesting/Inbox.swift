import FlowKitCore
import Synchronization

/// Events sent by a test store's effects, waiting to be applied, in the order they were sent.
///
/// Posting never suspends, so an effect that sends an event and then sleeps on a `TestClock` runs
/// straight from one to the other: its sleep is registered before the test can advance the clock.
final class Inbox<Event: Sendable>: Sendable {
    private struct State {
        var posts: [(event: Event, group: EffectGroup)] = []
        var nextWaiterID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    func post(_ event: Event, group: EffectGroup) {
        let waiters = state.withLock { state in
            state.posts.append((event, group))
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    func takeAll() -> [(event: Event, group: EffectGroup)] {
        state.withLock { state in
            defer { state.posts = [] }
            return state.posts
        }
    }

    var hasPosts: Bool { state.withLock { !$0.posts.isEmpty } }

    /// Suspends until something is posted or `deadline` passes on the wall clock.
    func waitForPost(until deadline: ContinuousClock.Instant) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let id: UInt64? = state.withLock { state in
                guard state.posts.isEmpty else { return nil }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters[id] = continuation
                return id
            }
            guard let id else {
                continuation.resume()
                return
            }
            Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                self?.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
