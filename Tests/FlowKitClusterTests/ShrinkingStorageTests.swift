@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import Testing

/// Storage given back once mostly empty: a queue and a table that held an entry for each of a
/// wave of instances keep none of that room once the wave has passed.
@Suite struct ShrinkingStorageTests {
    /// Drained from both ends and in runs, the queue gives back its room as it goes and keeps its
    /// order through every copy.
    @Test func aDrainedQueueGivesBackItsRoomAndKeepsItsOrder() {
        var queue = ShrinkingQueue<Int>()
        var expected: [Int] = []
        for value in 0..<100_000 {
            queue.append(value)
            expected.append(value)
        }
        #expect(queue.room == 100_000)
        var taken = 0
        while queue.count > 1_000 {
            switch taken % 3 {
            case 0: #expect(queue.popFirst() == expected.removeFirst())
            case 1: #expect(queue.popLast() == expected.removeLast())
            default:
                #expect(Array(queue.prefix(5)) == Array(expected.prefix(5)))
                queue.removeFirst(5)
                expected.removeFirst(5)
            }
            taken += 1
        }
        #expect(queue.room < 100_000 / 16 && queue.room >= queue.count)
        queue.append(-1)
        expected.append(-1)
        #expect(queue.takeAll() == expected)
        #expect(queue.isEmpty && queue.room == 0)
    }

    /// A small queue is not copied: its room is not worth giving back.
    @Test func aSmallQueueKeepsItsRoom() {
        var queue = ShrinkingQueue<Int>()
        for value in 0..<(ShrinkingStorage.smallestShrunk - 1) { queue.append(value) }
        while queue.count > 1 { _ = queue.popFirst() }
        #expect(queue.room == ShrinkingStorage.smallestShrunk - 1)
    }

    @Test func aMostlyEmptiedTableGivesBackItsRoom() {
        var table: [String: Int] = [:]
        for key in 0..<100_000 { table["k\(key)"] = key }
        let grown = table.capacity
        for key in 0..<99_000 {
            table["k\(key)"] = nil
            table.shrinkIfMostlyEmpty()
        }
        #expect(table.capacity <= grown / 16 && table.capacity <= 16 * table.count)
        let kept = (99_000..<100_000).filter { (key: Int) in table["k\(key)"] == key }
        #expect(table.count == 1_000 && kept.count == 1_000)
    }

    /// A wave of instances, each changed once, then all gone to rest: the set's table and its
    /// digests' queues hold room for what is left, not for the wave.
    @Test func aWaveGoneToRestLeavesNoRoomBehind() {
        var now: UInt64 = 1_000_000
        let count = 50_000
        let replicas = ReplicaDigestTests.counters(count) { now }
        func hashEverySlice() {
            while true {
                let jobs = replicas.nextDigestSlice(now: now)
                guard !jobs.isEmpty else { return }
                let (results, micros) = ReplicaSet.hash(jobs)
                replicas.finishDigestJobs(results, hashingMicros: micros)
            }
        }
        replicas.startDigestRound(now: now, spreadOver: 0)
        hashEverySlice()
        while !replicas.takeChanged(hashing: false).isEmpty {}
        let waveRoom = replicas.book.queuedRoom
        #expect(replicas.replicas.capacity >= count && waveRoom >= count, "the wave filled the table and the queues")

        now += ReplicaSet.restAfter
        for _ in 0..<1_000 where replicas.restingCount < count {
            now += 1_000_000
            replicas.startDigestRound(now: now, spreadOver: 0)
            hashEverySlice()
        }
        while !replicas.takeChanged(hashing: false).isEmpty {}
        #expect(replicas.restingCount == count && replicas.replicas.isEmpty)
        #expect(replicas.replicas.capacity < ShrinkingStorage.smallestShrunk)
        // Each of its three queues keeps less than the room not worth giving back.
        #expect(replicas.book.queuedRoom < 3 * ShrinkingStorage.smallestShrunk)
        #expect(replicas.combinedDigest(exact: true) == ReplicaDigestTests.counters(count).combinedDigest(exact: true))
    }
}
