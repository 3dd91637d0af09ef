import Synchronization

/// A live subscription to a store's states. Cancel it to stop receiving them.
///
/// Cancelling is synchronous and safe from any thread; after `cancel()` returns the subscriber is
/// never called again by a later event.
public struct StateSubscription: Sendable, Hashable {
    let id: UInt64
    let list: any SubscriberRemoving

    /// Stops the subscription. Calling it again does nothing.
    public func cancel() {
        list.remove(id)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.id == rhs.id && lhs.list === rhs.list
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(ObjectIdentifier(list))
    }
}

protocol SubscriberRemoving: AnyObject, Sendable {
    func remove(_ id: UInt64)
}

/// The subscribers of one store: callbacks and stream continuations.
///
/// The store notifies from its own executor; subscriptions are added there too, but cancelled from
/// anywhere, so the list sits behind a lock. An atomic count lets the hot path skip the lock when
/// nobody listens.
final class SubscriberList<State: Sendable>: SubscriberRemoving {
    enum Subscriber: Sendable {
        case callback(@Sendable (State) -> Void)
        case stream(AsyncStream<State>.Continuation)
    }

    private struct Registry {
        var nextID: UInt64 = 0
        /// In subscription order, so subscribers are told in the order they subscribed.
        var subscribers: [(id: UInt64, subscriber: Subscriber)] = []
    }

    private let registry = Mutex(Registry())
    private let count = Atomic<Int>(0)

    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    func add(_ subscriber: Subscriber) -> StateSubscription {
        let id = registry.withLock { registry in
            let id = registry.nextID
            registry.nextID += 1
            registry.subscribers.append((id, subscriber))
            count.store(registry.subscribers.count, ordering: .relaxed)
            return id
        }
        return StateSubscription(id: id, list: self)
    }

    func remove(_ id: UInt64) {
        let removed = registry.withLock { registry -> Subscriber? in
            defer { count.store(registry.subscribers.count, ordering: .relaxed) }
            guard let index = registry.subscribers.firstIndex(where: { $0.id == id }) else { return nil }
            return registry.subscribers.remove(at: index).subscriber
        }
        if case .stream(let continuation) = removed { continuation.finish() }
    }

    func notify(_ state: State) {
        let subscribers = registry.withLock { $0.subscribers }
        for (_, subscriber) in subscribers {
            switch subscriber {
            case .callback(let callback): callback(state)
            case .stream(let continuation): continuation.yield(state)
            }
        }
    }

    func finishAll() {
        let subscribers = registry.withLock { registry in
            defer {
                registry.subscribers = []
                count.store(0, ordering: .relaxed)
            }
            return registry.subscribers
        }
        for case (_, .stream(let continuation)) in subscribers { continuation.finish() }
    }
}
