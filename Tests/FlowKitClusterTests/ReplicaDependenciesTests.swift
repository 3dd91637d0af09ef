@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKit
import Foundation
import Logging
import Testing

/// Replicas of a flow whose reducer reads `uuid`, `date` and random numbers (the simulation's) hold
/// the same state after the same entries, whatever process they are in: the values derive from the
/// entries. A registration that gives them live values instead diverges at once.
@Suite struct ReplicaDependenciesTests {
    private func entries() -> [Entry] {
        (1...20 as ClosedRange<UInt64>).map { seq in
            Entry(
                seq: seq, epoch: 3, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
                submittedAt: 0, committedAt: 1_767_225_600_000_000 + seq * 1_000, address: "sim/k\(seq % 3)",
                payload: Array(#"{"append":{"_0":"t\#(seq)"}}"#.utf8)
            )
        }
    }

    private func replay(_ registry: FlowRegistry) throws -> ReplicaSet {
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for entry in entries() { replicas.apply(entry, runEffects: false) }
        return replicas
    }

    @Test func replicasDrawTheSameValuesFromTheSameEntries() throws {
        let (first, second) = (try replay(SimulationFlow.registry(build: 1)), try replay(SimulationFlow.registry(build: 1)))
        #expect(first.combinedDigest(exact: true) == second.combinedDigest(exact: true))
        let replica = try #require(first.replica(at: try Address(parsing: "sim/k1")))
        let state = try JSONDecoder().decode(SimulationFlow.State.self, from: Data(try replica.stateJSON()))
        #expect(state.marks.count == 7)
        #expect(Set(state.marks.map { $0.prefix(8) }).count == 7, "a different UUID for each entry: \(state.marks)")
        // The time each reducer read is its entry's commit time, in ms.
        #expect(state.marks.first?.contains(" 1767225600001 ") == true, "\(state.marks)")
    }

    @Test func liveValuesInAReducerDiverge() throws {
        let (first, second) = (try replay(SimulationFlow.registry(build: 1, liveDependencies: true)), try replay(SimulationFlow.registry(build: 1, liveDependencies: true)))
        #expect(first.combinedDigest(exact: true) != second.combinedDigest(exact: true))
    }
}
