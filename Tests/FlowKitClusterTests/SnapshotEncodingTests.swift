@_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import FlowKitLog
import Foundation
import Logging
import Testing

/// The sync socket's snapshot of many instances is made once for every request that arrives while
/// it is being made; a request after it starts a new one. The coordinator's newest saved snapshot
/// is served instead while few enough entries follow it.
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

    @Test func theNewestSavedSnapshotIsServedWhileItsTailIsShortEnough() async throws {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: Logger(label: "test"))
        await replica.applyNow(
            (1...30).map { seq in
                Entry(
                    seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq, submittedAt: 0, committedAt: 0,
                    address: "counter/\(seq)", payload: Array(#"{"increment":{}}"#.utf8)
                )
            }
        )
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("saved-snapshots-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SnapshotStore(directory: directory, logger: Logger(label: "test"))

        // Nothing saved yet: the replica's states, at its seq.
        let none = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 10))
        #expect(try await none.current().seq == 30)
        #expect(await none.encoded == 1)

        // Saved at 20 (states of its own, to tell them apart), 10 entries behind: served as saved.
        let saved = [SnapshotChunkMessage.Instance(address: "counter/saved", lastSeq: 20, state: Array(#"{"count":7}"#.utf8))]
        try store.save(Snapshot(seq: 20, bytes: SnapshotCodec.encode(saved)))
        let near = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 10))
        let served = try await near.current()
        #expect(served.seq == 20 && served.instances == saved)
        #expect(await near.servedSaved == 1)
        #expect(await near.encoded == 0)

        // More than `maxReplay` entries behind: encoded anew.
        let far = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 9))
        let encoded = try await far.current()
        #expect(encoded.seq == 30 && encoded.instances.count == 30)
        #expect(await far.servedSaved == 0)
        #expect(await far.encoded == 1)
    }
}
