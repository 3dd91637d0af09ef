@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import Logging
import Testing

/// Instances at rest: the arena and its table against a dictionary, and a restored set's records
/// woken, hashed, exported and fenced as objects would be.
@Suite struct RestingInstancesTests {
    /// Inserts, wakes and inserts again at random, through table growth, a reservation and the
    /// emptying of mostly dead chunks: every lookup agrees with a dictionary, and so does the walk.
    /// With chunks smaller than some records (256 bytes), a chunk of a few records (4 KiB), and
    /// the default.
    @Test(arguments: [256, 4_096, 1 << 20]) func theTableAgreesWithADictionary(chunkBytes: Int) {
        let resting = RestingInstances(chunkBytes: chunkBytes)
        var model: [String: (lastSeq: UInt64, state: [UInt8])] = [:]
        var random = SplitMix(state: 7)
        var compactions = 0
        for step in 0..<60_000 {
            let address = "counter/key-\(Int.random(in: 0..<8_000, using: &random))"
            if Bool.random(using: &random), model[address] == nil || step % 3 == 0 {
                let state = Array(repeating: UInt8(step % 251), count: Int.random(in: 0..<300, using: &random))
                let term = step % 2 == 0 ? DigestAccumulator.Term(high: UInt64(step), low: 1) : nil
                let replaced = resting.insert(address: address, lastSeq: UInt64(step), ownership: .init(fence: UInt64(step % 5)), term: term, state: state)
                #expect(replaced?.lastSeq == model[address]?.lastSeq && replaced?.state == model[address]?.state, "step \(step): \(address)")
                model[address] = (UInt64(step), state)
            } else {
                let taken = resting.take(address)
                #expect(taken?.lastSeq == model[address]?.lastSeq && taken?.state == model[address]?.state, "step \(step): \(address)")
                #expect(taken.map { $0.ownership.fence == $0.lastSeq % 5 && $0.term == DigestAccumulator.Term(high: $0.lastSeq, low: 1) } ?? true)
                model[address] = nil
                // Records without a term wait for hashing: hand them out and give the same term
                // back, as a restore's hashing does, so that the arena may be compacted.
                for record in resting.takeUnhashed(limit: .max) {
                    _ = resting.setTerm(DigestAccumulator.Term(high: record.lastSeq, low: 1), at: record.place, lastSeq: record.lastSeq)
                }
                let before = resting.arenaBytes
                resting.compactIfWorthIt(hashingOut: false)
                if resting.arenaBytes < before { compactions += 1 }
            }
            #expect(resting.count == model.count)
            if step == 30_000 { resting.reserve(records: 20_000) }
        }
        var walked: [String: UInt64] = [:]
        resting.forEach { walked[$0.address] = $0.lastSeq }
        #expect(walked == model.mapValues(\.lastSeq))
        #expect(model.keys.allSatisfy(resting.contains) && !resting.contains("counter/absent"))
        #expect(resting.arenaBytes == resting.chunks.reduce(0) { $0 + $1.count })
        // Some 1.6 MB of records at most: a chunk of 1 MiB is emptied only once it is not the
        // one being filled.
        #expect(compactions > 0 || chunkBytes > 1 << 19)
    }

    /// A snapshot's view of the records (``RestingInstances/frozen``) stays as it was while the
    /// set changes, and a change copies only the chunk it touches: after a million records rested,
    /// waking one after a snapshot copied all 60 MB of them on the owner's thread.
    @Test func aSnapshotsViewSharesEveryChunkAChangeDoesNotTouch() {
        let resting = RestingInstances(chunkBytes: 4_096)
        for key in 0..<1_000 {
            resting.insert(address: "counter/\(key)", lastSeq: UInt64(key + 1), ownership: .init(), term: .init(high: 1, low: UInt64(key)), state: Array("{\"count\":\(key)}".utf8))
        }
        let frozen = resting.frozen
        let chunks = resting.chunks.count
        #expect(chunks > 10 && sharedChunks(resting, frozen) == chunks)
        let woken = resting.take("counter/500")
        #expect(woken?.lastSeq == 501)
        // The woken record's chunk was copied; every other chunk is still the snapshot's.
        #expect(sharedChunks(resting, frozen) == chunks - 1)
        resting.insert(address: "counter/new", lastSeq: 2_000, ownership: .init(), term: nil, state: [])
        var seen: [String: UInt64] = [:]
        frozen.forEach { seen[$0.address] = $0.lastSeq }
        #expect(seen.count == 1_000 && seen["counter/500"] == 501 && seen["counter/new"] == nil)
        #expect(frozen.count == 1_000 && resting.count == 1_000)
    }

    /// How many of the set's chunks are the same storage as the snapshot's.
    private func sharedChunks(_ resting: RestingInstances, _ frozen: RestingInstances.Frozen) -> Int {
        zip(resting.chunks, frozen.chunks).filter { live, shared in
            live.withUnsafeBytes { a in shared.withUnsafeBytes { b in a.baseAddress == b.baseAddress } }
        }.count
    }

    /// Records woken until most of a chunk is dead: the chunk is emptied (its live records moved
    /// to the chunk being filled, their places in the table updated), and reused before the arena
    /// grows; everything still wakes with what it rested with.
    @Test func aMostlyDeadChunkIsEmptiedAndReused() {
        let resting = RestingInstances(chunkBytes: 1_024)
        for key in 0..<200 { resting.insert(address: "counter/\(key)", lastSeq: UInt64(key + 1), ownership: .init(fence: UInt64(key)), term: .init(high: 1, low: 1), state: [UInt8(key % 256)]) }
        let grown = resting.chunks.count
        // Wake two of every three: every chunk but the one being filled becomes mostly dead.
        for key in 0..<200 where key % 3 != 0 {
            _ = resting.take("counter/\(key)")
            resting.compactIfWorthIt(hashingOut: false)
        }
        let emptied = resting.chunks.filter(\.isEmpty).count
        #expect(emptied > 0, "chunks emptied")
        for key in 200..<260 { resting.insert(address: "counter/\(key)", lastSeq: UInt64(key + 1), ownership: .init(fence: UInt64(key)), term: .init(high: 1, low: 1), state: [UInt8(key % 256)]) }
        #expect(resting.chunks.count <= grown, "emptied chunks are filled again before new ones")
        for key in Array(stride(from: 0, to: 200, by: 3)) + Array(200..<260) {
            let record = resting.take("counter/\(key)")
            #expect(record?.lastSeq == UInt64(key + 1) && record?.ownership.fence == UInt64(key) && record?.state == [UInt8(key % 256)], "counter/\(key)")
        }
        #expect(resting.count == 0)
    }

    /// Records handed out for hashing take their terms back unless woken meanwhile.
    @Test func aRecordWokenWhileOutKeepsNoTerm() throws {
        let resting = RestingInstances()
        for key in 0..<3 { resting.insert(address: "counter/\(key)", lastSeq: UInt64(key + 1), ownership: .init(), term: nil, state: [UInt8(key)]) }
        let out = resting.takeUnhashed(limit: 10)
        #expect(out.map(\.address) == ["counter/0", "counter/1", "counter/2"] && resting.unhashed == 0)
        _ = resting.take("counter/1")
        let term = DigestAccumulator.Term(high: 1, low: 2)
        #expect(resting.setTerm(term, at: out[0].place, lastSeq: out[0].lastSeq))
        #expect(!resting.setTerm(term, at: out[1].place, lastSeq: out[1].lastSeq))
        #expect(!resting.setTerm(term, at: out[2].place, lastSeq: 99))
        #expect(resting.take("counter/0")?.term == term && resting.take("counter/2")?.term == nil)
    }

    private static func increment(_ key: Int, seq: UInt64) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
            address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
        )
    }

    /// A restored set holds its instances at rest; they are hashed from their records, woken by
    /// their next entry, and the set's digest, snapshot and fences are the source's throughout.
    @Test func aRestoredSetRestsUntilUsedAndAgreesWithItsSource() throws {
        let count = DigestBook.defaultHashedNowAtMost + 500
        let source = ReplicaDigestTests.counters(count)
        var instances = source.exportStates()
        instances[7].ownership.fence = 42
        let elsewhere = EffectOwner(node: 9, session: 1)
        instances[3].ownership.owners = [elsewhere]
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(instances)
        #expect(restored.count == count && restored.restingCount == count)
        #expect(restored.exportStates() == instances && restored.fences == [instances[7].address: 42])
        #expect(restored.ownerCounts == [elsewhere: 1] && restored.instances(ownedBy: elsewhere) == [instances[3].address])
        // Woken, it counts its owner once.
        _ = restored.replica(at: try Address(parsing: instances[3].address))
        #expect(restored.ownerCounts == [elsewhere: 1] && restored.instances(ownedBy: elsewhere) == [instances[3].address])

        // Two slices out; an instance of the first is woken and changed before its hash is back.
        let first = restored.takeDigestJobs(limit: 100)
        let wokenKey = Int(try #require(first.first).address.key)!
        for replicas in [source, restored] { replicas.apply(Self.increment(wokenKey, seq: UInt64(count + 1)), runEffects: false) }
        #expect(restored.restingCount == count - 2)
        let (results, micros) = ReplicaSet.hash(first)
        restored.finishDigestJobs(results, hashingMicros: micros)
        while restored.isHashingARestore {
            let (results, micros) = ReplicaSet.hash(restored.takeDigestJobs(limit: 256))
            restored.finishDigestJobs(results, hashingMicros: micros)
        }
        #expect(restored.combinedDigest(exact: true) == source.combinedDigest(exact: true))
        #expect(restored.digestsAreCurrent)

        // Woken after hashing: the next entry replaces its term, as an object's would.
        for replicas in [source, restored] { replicas.apply(Self.increment(9, seq: UInt64(count + 2)), runEffects: false) }
        #expect(restored.combinedDigest(exact: true) == source.combinedDigest(exact: true))
        var exported = source.exportStates()
        exported[7].ownership.fence = 42
        exported[3].ownership.owners = [elsewhere]
        #expect(restored.exportStates() == exported)
        #expect(restored.restingCount == count - 3)
    }

    /// An export taken while instances rest is what the set held then: waking and changing them
    /// after it (the owner's thread going on while another encodes the export) changes nothing in it.
    @Test func anExportOfInstancesAtRestIsTheSetAsItWasWhenTaken() throws {
        let source = ReplicaDigestTests.counters(1_000)
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(source.exportStates())
        restored.apply(Self.increment(1, seq: 1_001), runEffects: false)
        let before = restored.exportStates()
        let export = restored.exportStateJobs()
        #expect(export.live.count == 1 && export.resting.count == 999)
        for key in 2..<50 { restored.apply(Self.increment(key, seq: UInt64(1_000 + key)), runEffects: false) }
        #expect(restored.restingCount == 951)
        #expect(try SnapshotChunkMessage.instances(inRecords: SnapshotCodec.encode(export).bytes) == before)
        #expect(restored.exportStates() != before)
    }

    /// A snapshot's bytes copy a record at rest as it lies and encode an instance in use: the same
    /// instances give the same bytes either way, and mixed, in address order.
    @Test func aSnapshotOfInstancesAtRestIsByteForByteTheSnapshotOfThemInUse() throws {
        let source = ReplicaDigestTests.counters(3_000)
        let sessions = [DedupTable.Remembered(origin: 1, session: 9, watermark: 40, lastSeq: 40, above: [])]
        let inUse = SnapshotCodec.encode(source.exportStateJobs(), sessions: sessions)
        #expect(inUse.count == 3_000 && source.exportStateJobs().live.count == 3_000)
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(source.exportStates())
        #expect(restored.exportStateJobs().resting.count == 3_000)
        #expect(SnapshotCodec.encode(restored.exportStateJobs(), sessions: sessions).bytes == inUse.bytes)
        for key in stride(from: 0, to: 3_000, by: 7) { _ = restored.replica(at: try Address(parsing: "counter/\(key)")) }
        let mixed = restored.exportStateJobs()
        #expect(mixed.live.count == 429 && mixed.resting.count == 2_571)
        #expect(SnapshotCodec.encode(mixed, sessions: sessions).bytes == inUse.bytes)
        let (instances, remembered) = try SnapshotCodec.decode(inUse.bytes)
        #expect(instances == source.exportStates() && remembered == sessions)
        #expect(instances.map(\.address) == instances.map(\.address).sorted { $0.utf8Precedes($1) })
    }

    /// A node's local snapshot keeps its records as the set holds them, unsorted: the same
    /// instances and sessions as the sorted snapshot, the instances in use first, and a restore
    /// from it holds what the source held.
    @Test func aSnapshotAsHeldHoldsTheSortedOnesInstancesUnsorted() throws {
        let source = ReplicaDigestTests.counters(3_000)
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(source.exportStates())
        for key in stride(from: 0, to: 3_000, by: 7) { _ = restored.replica(at: try Address(parsing: "counter/\(key)")) }
        let sessions = [DedupTable.Remembered(origin: 1, session: 9, watermark: 40, lastSeq: 40, above: [])]
        var checks = 0
        let asHeld = SnapshotCodec.encode(restored.exportStateJobs(), sessions: sessions, order: .asHeld) { checks += 1 }
        let sorted = SnapshotCodec.encode(restored.exportStateJobs(), sessions: sessions)
        #expect(asHeld.count == 3_000 && checks >= 3_000 / 4_096 + 1)
        #expect(asHeld.bytes != sorted.bytes && asHeld.bytes.count == sorted.bytes.count)
        let (instances, remembered) = try SnapshotCodec.decode(asHeld.bytes)
        #expect(remembered == sessions)
        #expect(instances.sorted { $0.address.utf8Precedes($1.address) } == source.exportStates())
        let inUse = Set(stride(from: 0, to: 3_000, by: 7).map { "counter/\($0)" })
        #expect(Set(instances.prefix(inUse.count).map(\.address)) == inUse)
        let again = ReplicaDigestTests.counters(0)
        try again.importStates(instances)
        #expect(again.exportStates() == source.exportStates())
        #expect(again.combinedDigest(exact: true) == source.combinedDigest(exact: true))
    }

    /// A clock a test moves by hand.
    private final class TestClock: @unchecked Sendable {
        var now: UInt64 = 1_000_000
    }

    /// Runs every slice the set hands out now, as an owner's background thread would.
    private static func hashEverySlice(_ replicas: ReplicaSet, now: UInt64) {
        while true {
            let jobs = replicas.nextDigestSlice(now: now)
            guard !jobs.isEmpty else { return }
            let (results, micros) = ReplicaSet.hash(jobs)
            replicas.finishDigestJobs(results, hashingMicros: micros)
        }
    }

    /// Instances unchanged for `restAfter` go to rest, their states encoded off the thread; one
    /// changed while its encoding was out stays an object; one whose effects this process may run
    /// never rests. Woken, they go on as objects that never rested do.
    @Test func unchangedInstancesGoToRestAndWakeAsTheyWere() throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let clock = TestClock()
        var context = ReplicaContext.passive(logger: Logger(label: "test"))
        let here = EffectOwner(node: 1, session: 1)
        context.owner = here
        let replicas = ReplicaSet(registry: registry, context: context, logger: Logger(label: "test"), restAfter: 5_000_000) { clock.now }
        let never = ReplicaDigestTests.counters(0)
        let count = 300
        for key in 0..<count {
            for set in [replicas, never] { set.apply(Self.increment(key, seq: UInt64(key + 1)), runEffects: false) }
        }
        // An instance whose effects this process may run: a snapshot says so.
        var owned = never.exportStates().filter { $0.address == "counter/7" }
        owned[0].ownership.owners = [here]

        replicas.startDigestRound(now: clock.now, spreadOver: 0)
        Self.hashEverySlice(replicas, now: clock.now)
        #expect(replicas.restingCount == 0, "none was unchanged for long enough")

        clock.now += 5_000_000
        replicas.startDigestRound(now: clock.now, spreadOver: 0)
        let first = replicas.nextDigestSlice(now: clock.now)
        #expect(first.count == DigestBook.restoreSlice && first.allSatisfy { $0.encode != nil })
        // Changed while its encoding is out: it stays an object, with its new state.
        let changedKey = Int(try #require(first.first).address.key)!
        for set in [replicas, never] { set.apply(Self.increment(changedKey, seq: UInt64(count + 1)), runEffects: false) }
        let (results, micros) = ReplicaSet.hash(first)
        replicas.finishDigestJobs(results, hashingMicros: micros)
        Self.hashEverySlice(replicas, now: clock.now)
        #expect(replicas.restingCount == count - 1 && replicas.count == count)
        #expect(replicas.combinedDigest(exact: true) == never.combinedDigest(exact: true))
        #expect(replicas.exportStates() == never.exportStates())

        // Woken by entries, they go on from their states.
        for key in [3, changedKey, 299] {
            for set in [replicas, never] { set.apply(Self.increment(key, seq: UInt64(count + 2 + key)), runEffects: false) }
        }
        #expect(replicas.restingCount == count - 3)
        #expect(replicas.combinedDigest(exact: true) == never.combinedDigest(exact: true))
        #expect(replicas.exportStates() == never.exportStates())

        // Effects this process may run keep an instance an object, restored or not.
        let withOwner = ReplicaSet(registry: registry, context: context, logger: Logger(label: "test"), restAfter: 5_000_000) { clock.now }
        try withOwner.importStates(owned)
        #expect(withOwner.restingCount == 0)
        _ = withOwner.combinedDigest(exact: true)
        clock.now += 10_000_000
        withOwner.startDigestRound(now: clock.now, spreadOver: 0)
        Self.hashEverySlice(withOwner, now: clock.now)
        #expect(withOwner.restingCount == 0 && withOwner.count == 1)
    }

    /// A wave of instances due to rest at once goes at the rest budget's pace (a tenth of a thread,
    /// 50 ms at once), not back to back: slices go out until the budget is spent, then none until
    /// the time it has room again, which the set names so that its owner wakes then.
    @Test func aWaveOfInstancesGoesToRestWithinItsBudget() throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let clock = TestClock()
        let replicas = ReplicaSet(registry: registry, context: .passive(logger: Logger(label: "test")), logger: Logger(label: "test"), restAfter: 5_000_000) { clock.now }
        let count = 4 * DigestBook.restoreSlice
        for key in 0..<count { replicas.apply(Self.increment(key, seq: UInt64(key + 1)), runEffects: false) }
        _ = replicas.combinedDigest(exact: true)
        replicas.startDigestRound(now: clock.now, spreadOver: 0)
        #expect(replicas.nextDigestSlice(now: clock.now).isEmpty && replicas.nextDigestSliceDue == nil, "none is due to rest yet")

        // Each slice of the wave is charged 30 ms: two fit in the 50 ms the budget holds.
        clock.now += 5_000_000
        replicas.startDigestRound(now: clock.now, spreadOver: 0)
        func restSlice() -> Bool {
            let jobs = replicas.nextDigestSlice(now: clock.now)
            guard !jobs.isEmpty else { return false }
            #expect(jobs.allSatisfy { $0.encode != nil })
            replicas.finishDigestJobs(ReplicaSet.hash(jobs).results, hashingMicros: 30_000)
            return true
        }
        #expect(restSlice() && restSlice())
        #expect(!restSlice(), "the wave went on past its budget")
        #expect(replicas.restingCount == 2 * DigestBook.restoreSlice)
        // 10 ms overdrawn at a tenth of a thread: room again 100 ms later, and not before.
        let due = try #require(replicas.nextDigestSliceDue)
        #expect(due == clock.now + 100_010)
        clock.now = due - 10
        #expect(!restSlice())
        clock.now = due
        #expect(restSlice() && !restSlice())
        clock.now += 1_000_000
        #expect(restSlice())
        #expect(replicas.restingCount == count && replicas.nextDigestSliceDue == nil)
        #expect(replicas.combinedDigest(exact: true) == ReplicaDigestTests.counters(count).combinedDigest(exact: true))
    }
}
