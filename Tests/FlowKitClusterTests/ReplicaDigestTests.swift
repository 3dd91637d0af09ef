@_spi(Benchmarks) @testable import FlowKitCluster
import FlowKit
import FlowKitExamples
import Foundation
import Logging
import Testing

/// The digests a process reports for its instances: rehashed within a time budget, so a flow whose
/// state grows large cannot spend the process's time rehashing itself, and never reported for a
/// seq whose state they do not describe.
@Suite struct ReplicaDigestTests {
    private func entry(_ seq: UInt64, id: String) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
            submittedAt: 0, committedAt: 0, address: "ledger/big",
            payload: Array(#"{"record":{"_0":"\#(id)"}}"#.utf8)
        )
    }

    @Test func everyReportedDigestDescribesTheStateAtItsSeqAndTheLastOneIsReported() async throws {
        var registry = FlowRegistry()
        registry.register(LedgerFlow.self, as: "ledger")
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test"))
        var ids: [String] = []
        var reported: [UInt64: String] = [:]
        func report() {
            for (_, digest) in replicas.takeChanged() { reported[digest.seq] = digest.digest }
        }
        // A large state (hashing it takes a while), then small steps reported in quick succession:
        // the budget defers some of them.
        for seq in 1...20_000 as ClosedRange<UInt64> {
            ids.append("id-\(seq)")
            replicas.apply(entry(seq, id: ids.last!), runEffects: false)
        }
        var expected: [UInt64: String] = [:]
        expected[20_000] = try StateDigest(of: LedgerFlow.State(ids: ids)).description
        report()
        for seq in 20_001...20_020 as ClosedRange<UInt64> {
            ids.append("id-\(seq)")
            replicas.apply(entry(seq, id: ids.last!), runEffects: false)
            expected[seq] = try StateDigest(of: LedgerFlow.State(ids: ids)).description
            report()
        }
        #expect(reported[20_000] != nil)
        for (seq, digest) in reported { #expect(digest == expected[seq], "the digest reported for seq \(seq) is not its state's") }
        // A status query is exact at once; the periodic report catches up within the budget.
        #expect(replicas.combinedDigest(exact: true) == replicas.combinedDigest(exact: false))
        let deadline = ContinuousClock.now + .seconds(10)
        while reported[20_020] == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            report()
        }
        #expect(reported[20_020] == expected[20_020], "the last seq was reported with its state's digest")
    }
}
