@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import Dispatch
import FlowKitCore
import FlowKitExamples
import FlowKitLog
import Foundation
import Logging
import Synchronization
import Testing

/// The sync socket's snapshot of many instances is made once for every request that arrives while
/// it is being made; a request after it starts a new one. The coordinator's newest saved snapshot
/// is served instead while few enough entries follow it.
@Suite struct SnapshotEncodingTests {
    /// A coordinator replica with `count` counters, one entry each.
    private static func counters(_ count: Int) async -> CoordinatorReplica {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: Logger(label: "test"))
        await replica.applyNow(
            (0..<count).map { key in
                Entry(
                    seq: UInt64(key + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(key + 1),
                    submittedAt: 0, committedAt: 0, address: "counter/\(key)", payload: Array(#"{"increment":{}}"#.utf8)
                )
            }
        )
        return replica
    }

    @Test func requestsWhileASnapshotIsEncodedShareItAndALaterOneMakesAnother() async throws {
        // Enough instances that encoding them takes a while (a debug build: about a second).
        let count = 50_000
        let replica = await Self.counters(count)
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
        let replica = await Self.counters(30)
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

        // More entries behind than `maxReplay` and than it holds instances: encoded anew.
        let far = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 9))
        let encoded = try await far.current()
        #expect(encoded.seq == 30 && encoded.instances.count == 30)
        #expect(await far.servedSaved == 0)
        #expect(await far.encoded == 1)

        // As far behind, but holding more instances than entries follow it: served as saved.
        let many = (0..<12).map { SnapshotChunkMessage.Instance(address: "counter/saved\($0)", lastSeq: 20, state: Array(#"{"count":7}"#.utf8)) }
        try store.save(Snapshot(seq: 20, bytes: SnapshotCodec.encode(many)))
        let large = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 9))
        #expect(try await large.current().instances == many)
        #expect(await large.servedSaved == 1)
    }

    /// A node that asks while the Compactor encodes the same states waits for its snapshot rather
    /// than encoding them a second time beside it.
    @Test func aRequestDuringTheCompactorsSaveIsServedItsSnapshot() async throws {
        let count = 50_000
        let replica = await Self.counters(count)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compactor-save-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SnapshotStore(directory: directory, logger: Logger(label: "test"))
        let compactor = Compactor(
            replica: replica, writer: LogWriter(log: MemoryEntryLog()), snapshots: store, every: 1, retain: 1_000_000, logger: Logger(label: "test")
        )
        #expect(await compactor.waitForTheSaveUnderWay() == false)
        // A snapshot saved long ago, too far behind to serve.
        try store.save(Snapshot(seq: 1, bytes: SnapshotCodec.encode([])))
        let snapshots = SnapshotEncoding(replica: replica, saved: SavedSnapshots(store: store, maxReplay: 0, compactor: compactor))

        let saving = Task { await compactor.compactIfDue { _ in } }
        // Asked once the save is under way (it takes a while: a debug build encodes 50,000 states).
        for _ in 0..<10_000 where !(await compactor.isSaving) { try await Task.sleep(for: .milliseconds(1)) }
        try #require(await compactor.isSaving)
        let served = try await snapshots.current()
        await saving.value
        #expect(served.seq == UInt64(count) && served.isSaved && served.instances.count == count)
        #expect(await snapshots.encoded == 0)
    }

    /// A stop cancels the Compactor's task: the save under way is abandoned, not finished (a
    /// million states held the coordinator's exit a second and more), and nothing is saved.
    @Test func aStopAbandonsTheCompactorsSave() async throws {
        let count = 50_000
        let replica = await Self.counters(count)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("compactor-stop-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SnapshotStore(directory: directory, logger: Logger(label: "test"))
        let compactor = Compactor(
            replica: replica, writer: LogWriter(log: MemoryEntryLog()), snapshots: store, every: 1, retain: 1_000_000, logger: Logger(label: "test")
        )
        let saving = Task { await compactor.compactIfDue { _ in Issue.record("compacted after a stop") } }
        for _ in 0..<10_000 where !(await compactor.isSaving) { try await Task.sleep(for: .milliseconds(1)) }
        try #require(await compactor.isSaving)
        saving.cancel()
        await saving.value
        #expect(await compactor.isSaving == false)
        #expect(try store.latest() == nil, "nothing saved")

        // Not cancelled, the same save goes through.
        await compactor.compactIfDue { _ in }
        #expect(try store.latest()?.seq == UInt64(count))
    }

    /// Encoding looks whether to go on every 4,096 instances as it encodes those in use, once
    /// before it sorts them all, in each of the sort's steps, and every 4,096 as it writes them,
    /// so a save abandoned mid-way stops there.
    @Test func encodingStatesStopsWhereItsCheckThrows() async throws {
        let jobs = await Self.counters(10_000).snapshotJobs().jobs
        #expect(jobs.live.count == 10_000)
        var checks = 0
        #expect(SnapshotCodec.encode(jobs, checking: { checks += 1 }).count == 10_000)
        // 3 encoding 10,000, 1 before the sort, 11 in it (3 copying the addresses, 1 before the
        // runs, 3 runs of 4,096 at most, 2 in each of the 2 passes of merges), 3 writing.
        #expect(checks == 3 + 1 + 11 + 3)
        checks = 0
        #expect(throws: CancellationError.self) {
            try SnapshotCodec.encode(jobs) {
                checks += 1
                if checks == 2 { throw CancellationError() }
            }
        }
        #expect(checks == 2)
    }

    /// A job abandoned before the background thread starts it does not run.
    @Test func anAbandonedJobThatHasNotStartedDoesNotRun() async throws {
        let work = BackgroundWork(name: "test-abandon", priority: .background)
        let release = DispatchSemaphore(value: 0)
        let holding = Task { try await work.run { release.wait() } }
        let ran = Atomic<Bool>(false)
        let queued = Task { try await work.run(abandonable: { _ in ran.store(true, ordering: .relaxed) }) }
        try await Task.sleep(for: .milliseconds(50))
        queued.cancel()
        release.signal()
        try await holding.value
        await #expect(throws: CancellationError.self) { try await queued.value }
        #expect(ran.load(ordering: .relaxed) == false)
    }
}

extension SnapshotEncoding.Snapshot {
    /// Its instances, decoded from its bytes.
    var instances: [SnapshotChunkMessage.Instance] {
        (try? SnapshotCodec.decode(records.bytes).instances) ?? []
    }
}
