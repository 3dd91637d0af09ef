import FlowKitCore
import Foundation
import Logging
import ZeroMQ

/// Follows the log from its start (or the coordinator's snapshot, where the log was compacted)
/// and records a stretch of it as a ``ReplaySample``: the states of the instances the stretch
/// touches before it, its entries, and their states after it. States are computed by replaying
/// the log with this build's flows: the export is meant to run with the build the cluster runs, so
/// what it computes is what the cluster's replicas did (whose agreement `flowkit status` shows).
actor SampleExport: LogFollowing {
    var follower: LogFollower
    let syncSocket: AsyncSocket
    private let subscriber: AsyncSocket
    private let registry: FlowRegistry
    private let replicas: ReplicaSet
    /// The first seq to record, and the most entries to record.
    private var from: UInt64
    private let count: UInt64
    /// The last seq to record: the lower of the count's and the head when the export began.
    private var through: UInt64?
    /// Every state, as of `from - 1`.
    private var start: [SnapshotChunkMessage.Instance]?
    private var entries: [Entry] = []
    private var failure: (any Error)?
    private var finished: CheckedContinuation<Void, any Error>?
    private var isDone = false
    private var tasks: [Task<Void, Never>] = []

    init(registry: FlowRegistry, from: UInt64, count: UInt64, subscriber: AsyncSocket, sync: AsyncSocket) {
        self.registry = registry
        self.from = max(1, from)
        self.count = max(1, count)
        self.subscriber = subscriber
        self.syncSocket = sync
        self.replicas = ReplicaSet(registry: registry, logger: Logger(label: "flowkit.export", factory: { _ in SwiftLogNoOpLogHandler() }))
        follower = LogFollower(applied: 0, versions: ReadableVersions(registry))
        if self.from == 1 { start = [] }
    }

    /// Follows until the stretch is recorded; then builds the sample.
    func run(timeout: Duration) async throws -> ReplaySample {
        let subscriber = self.subscriber
        let sync = self.syncSocket
        tasks = [
            Task { [weak self] in
                while let batch = try? await subscriber.receiveBatch() { await self?.followPublished(batch) }
            },
            Task { [weak self] in
                while let batch = try? await sync.receiveBatch() { await self?.followSync(batch) }
            },
            Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(100))
                    await self?.tickFollower()
                }
            },
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.finish(ProtocolError(.coordinatorUnavailable, "the export did not reach its last entry within \(timeout)"))
            },
        ]
        try await withCheckedThrowingContinuation { continuation in
            if isDone { continuation.resume() } else { finished = continuation }
        }
        for task in tasks { task.cancel() }
        if let failure { throw failure }
        return try sample()
    }

    /// The log was compacted below where the export began: the snapshot's states are the start,
    /// if it is past the requested one.
    func restore(seq: UInt64, instances: [SnapshotChunkMessage.Instance]) throws {
        do {
            try replicas.importStates(instances)
        } catch {
            finish(error)
            throw error
        }
        entries = []
        if seq + 1 >= from {
            from = seq + 1
            start = replicas.exportStates()
        }
    }

    func apply(_ released: [Entry]) {
        guard !isDone else { return }
        for entry in released {
            guard through.map({ entry.seq <= $0 }) ?? true else { break }
            replicas.apply(entry, runEffects: false)
            if entry.seq >= from { entries.append(entry) }
            if entry.seq + 1 == from { start = replicas.exportStates() }
        }
    }

    func followed(restored: Bool) {
        guard !isDone else { return }
        if let unreadable = follower.unreadable {
            finish(ProtocolError(.versionUnreadable, "this build cannot export past it: \(unreadable); export with the build the cluster runs"))
            return
        }
        // The head as the export began (the first the coordinator announced) bounds the stretch.
        if through == nil, follower.knownHead > 0 { through = min(from + count - 1, follower.knownHead) }
        guard let through else { return }
        if through < from {
            finish(ProtocolError(.notFound, "the log ends at seq \(through), before the export's first seq \(from)"))
        } else if follower.applied >= through {
            finish(nil)
        }
    }

    private func finish(_ error: (any Error)?) {
        guard !isDone else { return }
        isDone = true
        failure = error
        finished?.resume()
        finished = nil
    }

    /// The sample: the instances the entries touch, at both ends.
    private func sample() throws -> ReplaySample {
        let touched = Set(entries.map(\.address))
        let startStates = try (start ?? []).filter { touched.contains($0.address) }.map { try ReplaySample.Instance($0, registry: registry) }
        let endStates = try replicas.exportStates().filter { touched.contains($0.address) }.map { try ReplaySample.Instance($0, registry: registry) }
        return ReplaySample(
            from: from, through: entries.last?.seq ?? from - 1, flows: registry.versionsAboveOne ?? [:],
            start: startStates, entries: entries.map(ReplaySample.Record.init), end: endStates
        )
    }

    func close() async {
        for task in tasks { task.cancel() }
        await subscriber.close(linger: .zero)
        await syncSocket.close(linger: .zero)
    }
}

extension ClusterClient {
    /// Records a stretch of the cluster's log as a ``ReplaySample`` for the replay check
    /// (docs/VERSIONING.md): `count` entries from `from` (or from the coordinator's snapshot, where
    /// the log was compacted past it), up to the head as the export began.
    ///
    /// - Parameters:
    ///   - registry: This build's flows, which replay the stretch to record the states after it.
    ///     Export with the build the cluster runs.
    ///   - from: The first seq to record.
    ///   - count: The most entries to record.
    ///   - coordinator: The coordinator's endpoints; the node's STATUS names them by default.
    ///   - coordinatorPublicKey: The coordinator's CURVE key, when it uses CURVE.
    ///   - timeout: How long the whole export may take.
    /// - Returns: The sample; write it with ``ReplaySample/encoded()``.
    public func exportSample(
        registry: FlowRegistry, from: UInt64 = 1, count: UInt64, coordinator: CoordinatorEndpoints? = nil, coordinatorPublicKey: CurveKey? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> ReplaySample {
        var endpoints = coordinator
        if endpoints == nil { endpoints = try await status().coordinator }
        guard let endpoints else {
            throw ClusterClientError.unexpectedReply("the node's STATUS names no coordinator endpoints; pass coordinator:")
        }
        let (subscriber, sync) = try await loop.openFollowerSockets(to: endpoints, transport: transport, serverKey: coordinatorPublicKey)
        let export = SampleExport(registry: registry, from: from, count: count, subscriber: subscriber, sync: sync)
        do {
            let sample = try await export.run(timeout: timeout)
            await export.close()
            return sample
        } catch {
            await export.close()
            throw error
        }
    }
}
