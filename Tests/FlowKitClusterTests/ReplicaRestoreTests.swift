@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import Logging
import Testing

/// A restored snapshot's states stay as they came until their instance is first used: the restore
/// of a million instances decoded every state on the owner's thread before the first entry.
@Suite struct ReplicaRestoreTests {
    private static func increment(_ key: Int, seq: UInt64) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
            address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
        )
    }

    private static func counter(_ replicas: ReplicaSet, _ key: Int) throws -> TypedReplica<CounterFlow> {
        try #require(replicas.replica(at: try Address(parsing: "counter/\(key)")) as? TypedReplica<CounterFlow>)
    }

    @Test func restoredStatesAreDecodedAtFirstUseAndHashedWithoutIt() throws {
        let source = ReplicaDigestTests.counters(3)
        source.apply(Self.increment(0, seq: 4), runEffects: false)
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(source.exportStates())
        #expect(try (0..<3).allSatisfy { try Self.counter(restored, $0).isStateEncoded })

        // Hashing off the thread and encoding a snapshot leave them encoded, and agree with the source.
        let (results, micros) = ReplicaSet.hash(restored.takeDigestJobs())
        restored.finishDigestJobs(results, hashingMicros: micros)
        #expect(results.count == 3 && restored.digestsAreCurrent)
        #expect(restored.combinedDigest(exact: true) == source.combinedDigest(exact: true))
        #expect(restored.exportStates() == source.exportStates())
        #expect(try Self.counter(restored, 1).isStateEncoded)

        // The first entry decodes the state and applies to it.
        restored.apply(Self.increment(0, seq: 5), runEffects: false)
        let first = try Self.counter(restored, 0)
        #expect(!first.isStateEncoded && first.state.count == 3)
        #expect(try Self.counter(restored, 2).state.count == 1)
    }

    @Test func aRestoredStateThatDoesNotDecodeGoesOnFromTheInitialStateAndDiverges() throws {
        let source = ReplicaDigestTests.counters(2)
        var instances = source.exportStates()
        instances[1].state = Array(#"{"count":"many"}"#.utf8)
        let restored = ReplicaDigestTests.counters(0)
        try restored.importStates(instances)
        for replicas in [source, restored] { replicas.apply(Self.increment(1, seq: 3), runEffects: false) }
        #expect(try Self.counter(restored, 1).state.count == 1)
        #expect(try Self.counter(source, 1).state.count == 2)
        #expect(restored.combinedDigest(exact: true) != source.combinedDigest(exact: true))
    }
}
