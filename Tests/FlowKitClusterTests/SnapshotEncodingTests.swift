@_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import Logging
import Testing

/// The sync socket's snapshot of many instances is encoded once for every request that arrives
/// while it is being made; a request after it starts a new one.
@Suite struct SnapshotEncodingTests {
    @Test func requestsWhileASnapshotIsEncodedShareItAndALaterOneMakesAnother() async throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: Logger(label: "test"))
        // Enough instances that encoding them takes a while (a debug build: about a second).
        let count = 50_000
        await replica.applyNow(
            (0..<count).map { key in
                Entry(
                    seq: UInt64(key + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(key + 1),
                    submittedAt: 0, committedAt: 0, address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
                )
            }
        )
        let snapshots = SnapshotEncoding(replica: replica)
        async let first = snapshots.current()
        async let second = snapshots.current()
        async let third = snapshots.current()
        let all = try await [first, second, third]
        #expect(await snapshots.encoded == 1)
        #expect(all.allSatisfy { $0.seq == UInt64(count) && $0.instances.count == count })
        #expect(all[0].instances.map(\.address) == all[0].instances.map(\.address).sorted { $0.utf8Precedes($1) })

        _ = try await snapshots.current()
        #expect(await snapshots.encoded == 2)
    }
}
