import DequeModule

/// When a queue or table gives back storage it no longer needs (``ShrinkingQueue``,
/// `Dictionary.shrinkIfMostlyEmpty()`).
enum ShrinkingStorage {
    /// Below this many entries of capacity, storage is too small to be worth giving back.
    static let smallestShrunk = 4_096
    /// Storage is given back once what it holds falls below this fraction of its capacity: each
    /// copy is paid for by the many entries taken out before it, so storage emptied one entry at
    /// a time still costs a constant per entry.
    static let shrinkBelowOneIn = 16
}

/// A first-in first-out queue that gives back its storage once mostly drained.
///
/// A `Deque` keeps the capacity it grew to: a queue that held an entry for each of a million
/// instances while they were populated (the digests to report, the instances that may go to
/// rest) kept that storage, tens of bytes an instance, after the last of them was taken. This one
/// notes the most it held since it last shrank, and copies what it holds into storage of its size
/// when that falls below a sixteenth of the most (``ShrinkingStorage``).
struct ShrinkingQueue<Element> {
    private var storage: Deque<Element> = []
    /// The entries its storage has room for, near enough: the most it held since it last shrank.
    private(set) var room = 0

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }
    var first: Element? { storage.first }

    mutating func append(_ element: Element) {
        storage.append(element)
        room = max(room, storage.count)
    }

    mutating func popFirst() -> Element? {
        defer { shrinkIfMostlyEmpty() }
        return storage.popFirst()
    }

    mutating func popLast() -> Element? {
        defer { shrinkIfMostlyEmpty() }
        return storage.popLast()
    }

    /// The first `count` elements, left in the queue.
    func prefix(_ count: Int) -> Deque<Element>.SubSequence { storage.prefix(count) }

    mutating func removeFirst(_ count: Int) {
        storage.removeFirst(count)
        shrinkIfMostlyEmpty()
    }

    /// Empties the queue and its storage.
    mutating func removeAll() {
        storage = []
        room = 0
    }

    /// Everything in the queue, first to last, and the queue emptied.
    mutating func takeAll() -> [Element] {
        defer { removeAll() }
        return Array(storage)
    }

    private mutating func shrinkIfMostlyEmpty() {
        guard room >= ShrinkingStorage.smallestShrunk, storage.count * ShrinkingStorage.shrinkBelowOneIn < room else { return }
        var smaller = Deque<Element>(minimumCapacity: storage.count)
        smaller.append(contentsOf: storage)
        storage = smaller
        room = storage.count
    }
}

extension Dictionary {
    /// Gives back the storage of a table left mostly empty (a `Dictionary` keeps the capacity it
    /// grew to): copies what it holds into a table of its size once that is under a sixteenth of
    /// the capacity (``ShrinkingStorage``).
    /// - Parameter smallest: Below this capacity it is kept (one of many small tables may give
    ///   back less: ``ShardedDictionary``).
    mutating func shrinkIfMostlyEmpty(smallest: Int = ShrinkingStorage.smallestShrunk) {
        guard capacity >= smallest, count * ShrinkingStorage.shrinkBelowOneIn < capacity else { return }
        var smaller = Self(minimumCapacity: count)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
