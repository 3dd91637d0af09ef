/// A dictionary kept as 256 small tables, chosen by the key's hash, so that it never grows all at
/// once.
///
/// A `Dictionary` grows by doubling: the insert that fills it copies and rehashes every entry
/// into a table twice the size, on the thread that inserts. A process holding a million
/// instances at rest wakes them as events come, and its table of live instances grows under load:
/// on this project's 2-core hosts the insert that took a `[String: any FlowReplica]` past
/// 196,608 entries took 40 ms, and the one past 98,304 took 17 ms, each a stall of a node's loop
/// (or the coordinator replica's thread) with events waiting. Here each table holds about a
/// 256th of the entries, so the largest copy at a time is a 256th of the whole (under 0.2 ms for
/// those 196,608), and the total work of growing is the same. Redis's hash tables move their
/// entries over many operations for the same reason; tables of their own are simpler here, and
/// cost one more hash of the key per operation.
struct ShardedDictionary<Key: Hashable, Value> {
    /// How many tables: a power of two.
    static var shardCount: Int { 256 }
    private var shards = [[Key: Value]](repeating: [:], count: Self.shardCount)
    /// How many entries it holds.
    private(set) var count = 0

    init() {}

    var isEmpty: Bool { count == 0 }

    /// The table of `key`: the top bits of its hash (a table's own buckets are chosen by a hash
    /// seeded per table, so its keys sharing these bits does not crowd them).
    private static func shard(of key: Key) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: key.hashValue) >> UInt(UInt.bitWidth - 8))
    }

    subscript(key: Key) -> Value? {
        get { shards[Self.shard(of: key)][key] }
        set {
            let shard = Self.shard(of: key)
            if let newValue {
                if shards[shard].updateValue(newValue, forKey: key) == nil { count += 1 }
            } else if shards[shard].removeValue(forKey: key) != nil {
                count -= 1
                shards[shard].shrinkIfMostlyEmpty(smallest: ShrinkingStorage.smallestShrunk / Self.shardCount)
            }
        }
    }

    /// Inserts `key` with `value` if it is absent.
    /// - Returns: Whether it was absent.
    @discardableResult
    mutating func insertIfAbsent(_ key: Key, _ value: Value) -> Bool {
        let shard = Self.shard(of: key)
        guard shards[shard][key] == nil else { return false }
        shards[shard][key] = value
        count += 1
        return true
    }

    /// Empties it, storage included.
    mutating func removeAll() {
        self = Self()
    }

    var keys: some Sequence<Key> { shards.lazy.flatMap(\.keys) }
    var values: some Sequence<Value> { shards.lazy.flatMap(\.values) }

    /// How many entries its tables have room for, in all.
    var capacity: Int { shards.reduce(0) { $0 + $1.capacity } }

    /// The most entries any one table has room for: what one insert copies at most.
    var largestShardCapacity: Int { shards.map(\.capacity).max() ?? 0 }
}

extension ShardedDictionary: Sequence {
    typealias Element = (key: Key, value: Value)

    func makeIterator() -> some IteratorProtocol<Element> {
        shards.lazy.flatMap { $0.lazy.map { (key: $0.key, value: $0.value) } }.makeIterator()
    }
}

/// Instances by address text (``ReplicaSet/replicas``).
typealias HeldReplicas = ShardedDictionary<String, any FlowReplica>

/// A set kept as small tables (``ShardedDictionary``): it never grows all at once.
struct ShardedSet<Element: Hashable> {
    private var table = ShardedDictionary<Element, Void>()

    init() {}

    var count: Int { table.count }
    var isEmpty: Bool { table.isEmpty }

    mutating func insert(_ element: Element) { table.insertIfAbsent(element, ()) }

    func contains(_ element: Element) -> Bool { table[element] != nil }

    /// Every element, in no order.
    var elements: [Element] { Array(table.keys) }
}

extension ShardedSet: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: Element...) {
        for element in elements { insert(element) }
    }
}
