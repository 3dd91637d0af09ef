@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import FlowKitLog
import Foundation
import Logging
import Testing

/// A node's local snapshots: a base of every instance, then deltas of those changed, restored as
/// the node held them at the chain's end.
@Suite struct LocalSnapshotChainTests {
    private final class TestClock: @unchecked Sendable {
        var now: UInt64 = 1_000_000
    }

    private static func directory() -> String {
        let path = NSTemporaryDirectory() + "flowkit-chain-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private static func increment(_ key: Int, seq: UInt64) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
            address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
        )
    }

    /// A copy of `replicas` taken in one turn.
    private static func copied(_ replicas: ReplicaSet, everything: Bool, keptAtMost: Int = .max) -> ReplicaSet.StateExport {
        let copy = replicas.startCopy(at: 0, everything: everything, keptAtMost: keptAtMost)
        replicas.copy(copy, atMost: .max)
        return copy.states
    }

    @Test func theFirstIsABaseThenDeltasUntilTheyHoldHalfTheBase() {
        var chain = LocalSnapshots.Chain()
        #expect(chain.continued(by: 1) == nil, "no base yet")
        #expect(chain.room == 0 && chain.room(afterSaving: 1_000, delta: false) == 500)
        chain.saved(seq: 100, records: 1_000, delta: false)
        #expect(chain.continued(by: 300) == 100 && chain.room(afterSaving: 300, delta: true) == 200)
        chain.saved(seq: 200, records: 300, delta: true)
        #expect(chain.continued(by: 200) == 200, "500 records in deltas: half the base")
        #expect(chain.continued(by: 201) == nil, "more than half the base")
        #expect(chain.room == 200)
        chain.saved(seq: 300, records: 900, delta: false)
        #expect(chain == LocalSnapshots.Chain(end: 300, baseRecords: 900, deltaRecords: 0, deltas: 0))
        for seq in 1...UInt64(LocalSnapshots.Chain.maxDeltas) { chain.saved(seq: 300 + seq, records: 1, delta: true) }
        #expect(chain.continued(by: 1) == nil, "at most \(LocalSnapshots.Chain.maxDeltas) deltas follow a base")
    }

    /// Deltas follow a base in a chain: a damaged one, or one that follows another file, ends it,
    /// and it and every later one are deleted; the next base deletes every delta.
    @Test func aChainEndsAtTheFirstDeltaThatDoesNotFollow() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SnapshotStore(directory: directory, logger: Logger(label: "test"))
        try store.saveDelta(Snapshot(seq: 5, bytes: [5]), follows: 1)
        #expect(try store.latestChain() == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "a delta without its base is deleted")

        try store.save(Snapshot(seq: 10, bytes: [10]))
        for (seq, follows) in [(20, 10), (30, 20), (40, 30)] as [(UInt64, UInt64)] {
            try store.saveDelta(Snapshot(seq: seq, bytes: [UInt8(seq)]), follows: follows)
        }
        var chain = try #require(try store.latestChain())
        #expect(chain.snapshot.seq == 10 && chain.deltas.map(\.seq) == [20, 30, 40] && chain.deltas.map(\.bytes) == [[20], [30], [40]])

        // Damage the delta at 30: the chain ends at 20, and 30 and 40 go.
        let damaged = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix("delta-") && $0.contains("30") })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + damaged))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: directory + "/" + damaged))
        chain = try #require(try store.latestChain())
        #expect(chain.deltas.map(\.seq) == [20])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("delta-") }.count == 1)

        // One that follows a file the chain does not end with ends it too.
        try store.saveDelta(Snapshot(seq: 50, bytes: [50]), follows: 45)
        try store.saveDelta(Snapshot(seq: 60, bytes: [60]), follows: 50)
        chain = try #require(try store.latestChain())
        #expect(chain.deltas.map(\.seq) == [20])
        try store.saveDelta(Snapshot(seq: 50, bytes: [50]), follows: 20)
        #expect(try store.latestChain()?.deltas.map(\.seq) == [20, 50])

        try store.save(Snapshot(seq: 70, bytes: [70]))
        chain = try #require(try store.latestChain())
        #expect(chain.snapshot.seq == 70 && chain.deltas.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("delta-") }.isEmpty)
    }

    /// Past the most a delta may hold, a set stops keeping changed addresses: the next snapshot
    /// is a base, and a million addresses kept would cost more than 100 MB.
    @Test func aSetKeepsNoMoreChangesThanADeltaMayHold() {
        let replicas = ReplicaDigestTests.counters(0)
        #expect(replicas.changedCount == 0 && !replicas.tracksChanges)
        replicas.trackChanges(everything: false, keptAtMost: 5)
        for key in 0..<5 { replicas.apply(Self.increment(key, seq: UInt64(key + 1)), runEffects: false) }
        replicas.apply(Self.increment(0, seq: 6), runEffects: false)
        #expect(!replicas.everythingChanged && replicas.changedCount == 5)
        #expect(Self.copied(replicas, everything: false, keptAtMost: 5).live.map(\.address).sorted() == (0..<5).map { "counter/\($0)" })
        for key in 0..<6 { replicas.apply(Self.increment(key, seq: UInt64(key + 7)), runEffects: false) }
        #expect(replicas.everythingChanged && replicas.changedCount == 6)
        #expect(Self.copied(replicas, everything: false).count == 6, "every instance")
        #expect(!replicas.everythingChanged && replicas.changedCount == 0)
    }

    /// The later file's record of an address wins; addresses new in a delta join the base's.
    @Test func aMergeKeepsEachAddressOnceAsTheLastFileHasIt() {
        func instance(_ key: String, _ seq: UInt64) -> SnapshotChunkMessage.Instance {
            SnapshotChunkMessage.Instance(address: "counter/\(key)", lastSeq: seq, state: Array("{\"count\":\(seq)}".utf8))
        }
        let merged = LocalSnapshots.merged([instance("a", 1), instance("b", 2)], [[instance("b", 3), instance("c", 4)], [instance("c", 5)]])
        #expect(merged.count == 3)
        #expect(Dictionary(uniqueKeysWithValues: merged.map { ($0.address, $0.lastSeq) }) == ["counter/a": 1, "counter/b": 3, "counter/c": 5])
    }

    /// What a randomized run of the chain plants to prove its check finds it.
    enum Mutant: String, CaseIterable {
        case none
        /// A delta leaves out one changed instance.
        case dropOneChange
        /// A restore applies again the entries its instances' copies hold (no skip).
        case replayCoveredEntries
    }

    /// Entries at random over 2,000 counters, some of which go to rest between snapshots; a
    /// snapshot now and then, a base or a delta as the chain says, copied a random slice at a time
    /// with entries applied between the slices, and written to a real store. After each, a set
    /// restored from the store, then given the entries after the chain's end, holds exactly what
    /// the source holds. The check has teeth: a delta that leaves out one changed instance is
    /// found, and so is a restore that applies an entry a copy holds already.
    @Test(arguments: Mutant.allCases) func aRestoredChainAndTheLogAfterItHoldWhatTheSetHolds(mutant: Mutant) throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let logger = Logger(label: "test")
        let clock = TestClock()
        let source = ReplicaSet(registry: registry, context: .passive(logger: logger), logger: logger, restAfter: 5_000_000) { clock.now }
        source.trackChanges(everything: true)
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SnapshotStore(directory: directory, logger: logger)
        var chain = LocalSnapshots.Chain()
        var random = SplitMix(state: 11)
        var log: [Entry] = []
        func applyAtRandom(_ count: Int) {
            for _ in 0..<count {
                // Most entries on a few hot counters, some anywhere.
                let key = Bool.random(using: &random) ? Int.random(in: 0..<50, using: &random) : Int.random(in: 0..<2_000, using: &random)
                log.append(Self.increment(key, seq: UInt64(log.count + 1)))
                source.apply(log[log.count - 1], runEffects: false)
            }
        }
        var (bases, deltas, restores, mismatches, dropped, fuzzy) = (0, 0, 0, 0, false, 0)
        for round in 0..<80 {
            applyAtRandom(Int.random(in: 1...400, using: &random))
            clock.now += 2_000_000
            source.startDigestRound(now: clock.now, spreadOver: 0)
            while case let jobs = source.nextDigestSlice(now: clock.now), !jobs.isEmpty {
                let (results, micros) = ReplicaSet.hash(jobs)
                source.finishDigestJobs(results, hashingMicros: micros)
            }
            guard round < 3 || Int.random(in: 0..<3, using: &random) == 0 else { continue }
            let (follows, copy) = chain.startNext(from: source, at: UInt64(log.count))
            while !copy.isDone {
                source.copy(copy, atMost: Int.random(in: 1...300, using: &random))
                applyAtRandom(Int.random(in: 0...40, using: &random))
            }
            var states = copy.states
            if mutant == .dropOneChange, follows != nil, !dropped, states.live.count > 1 {
                states.live.removeLast()
                dropped = true
            }
            let (bytes, count) = SnapshotCodec.encode(states, order: .asHeld)
            if let follows {
                try store.saveDelta(Snapshot(seq: copy.start, bytes: bytes), follows: follows)
                deltas += 1
            } else {
                try store.save(Snapshot(seq: copy.start, bytes: bytes))
                bases += 1
            }
            chain.saved(seq: copy.start, records: count, delta: follows != nil)

            let (instances, loaded) = try #require(try LocalSnapshots.load(from: store))
            #expect(loaded == chain)
            let restored = ReplicaSet(registry: registry, logger: logger)
            try restored.importStates(instances)
            let consistentFrom = instances.reduce(copy.start) { max($0, $1.lastSeq) }
            if consistentFrom > copy.start { fuzzy += 1 }
            restored.skipsAppliedEntriesUpTo = mutant == .replayCoveredEntries ? 0 : consistentFrom
            for entry in log[Int(copy.start)...] { restored.apply(entry, runEffects: false) }
            restores += 1
            if restored.exportStates() != source.exportStates() { mismatches += 1 }
        }
        #expect(source.restingCount > 0, "some changed instances went to rest before a delta held them")
        #expect(bases >= 2 && deltas >= 10 && restores >= 25 && fuzzy >= restores / 2, "\(bases) bases, \(deltas) deltas, \(restores) restores, \(fuzzy) fuzzy")
        switch mutant {
        case .none: #expect(mismatches == 0, "\(mismatches) of \(restores) restores differed from the source")
        case .dropOneChange: #expect(dropped && mismatches > 0, "a delta without one of its changes restored a set unlike the source")
        case .replayCoveredEntries: #expect(mismatches > 0, "entries applied twice made a set unlike the source")
        }
    }

    /// A set replaced by a snapshot's instances while a copy of it is taken: the copy holds no
    /// state the log passed through, and is abandoned.
    @Test func aCopyAcrossAnImportIsAbandoned() throws {
        let replicas = ReplicaDigestTests.counters(0)
        for key in 0..<10 { replicas.apply(Self.increment(key, seq: UInt64(key + 1)), runEffects: false) }
        let copy = replicas.startCopy(at: 10, everything: true)
        replicas.copy(copy, atMost: 4)
        #expect(!copy.isDone && copy.remaining == 6)
        try replicas.importStates(replicas.exportStates())
        replicas.copy(copy, atMost: 4)
        #expect(copy.isDone && copy.isAbandoned)
        #expect(replicas.skipsAppliedEntriesUpTo == 0)
    }
}
