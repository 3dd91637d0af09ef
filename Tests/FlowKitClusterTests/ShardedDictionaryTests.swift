@testable import FlowKitCluster
import Testing

/// The table of live instances, kept as small tables so that it never grows all at once.
@Suite struct ShardedDictionaryTests {
    /// Random inserts, updates and removals, against a `Dictionary`: the same entries, count and
    /// iteration.
    @Test func itHoldsWhatADictionaryHolds() {
        var random = SeededRandom(seed: 7)
        var sharded = ShardedDictionary<String, Int>()
        var plain: [String: Int] = [:]
        for step in 0..<60_000 {
            let key = "counter/k-\(Int.random(in: 0..<5_000, using: &random))"
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                sharded[key] = nil
                plain[key] = nil
            case 1:
                #expect(sharded.insertIfAbsent(key, step) == (plain[key] == nil))
                if plain[key] == nil { plain[key] = step }
            default:
                sharded[key] = step
                plain[key] = step
            }
            #expect(sharded[key] == plain[key])
        }
        #expect(sharded.count == plain.count && sharded.isEmpty == plain.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: sharded.map { ($0.key, $0.value) }) == plain)
        #expect(Set(sharded.keys) == Set(plain.keys))
        #expect(sharded.values.sorted() == plain.values.sorted())
    }

    /// Grown to 100,000 entries, no one table has room for more than a small share of them (one
    /// `Dictionary` would copy every entry at its last doubling); emptied, it gives the room back.
    @Test func noTableGrowsToTheWholeAndTheRoomIsGivenBack() {
        var table = ShardedDictionary<String, Int>()
        let count = 100_000
        for index in 0..<count { table["counter/bench-\(index)"] = index }
        #expect(table.count == count && table.capacity >= count)
        #expect(table.largestShardCapacity <= count / 64, "a table had room for \(table.largestShardCapacity) of \(count)")
        for index in 0..<count { table["counter/bench-\(index)"] = nil }
        #expect(table.isEmpty)
        #expect(table.capacity < ShrinkingStorage.smallestShrunk)
    }

    @Test func aShardedSetHoldsEachElementOnce() {
        var set: ShardedSet<String> = ["a", "b"]
        set.insert("a")
        set.insert("c")
        #expect(set.count == 3 && set.contains("c") && !set.contains("d"))
        #expect(Set(set.elements) == ["a", "b", "c"])
        set = []
        #expect(set.isEmpty)
    }
}
