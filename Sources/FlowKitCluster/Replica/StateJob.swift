import FlowKitCore
import Foundation

extension ReplicaSet {
    /// One instance's state to encode elsewhere, with what a snapshot keeps beside it.
    struct StateJob: Sendable {
        var address: String
        var lastSeq: UInt64
        var ownership: SnapshotChunkMessage.Ownership
        /// The version of the flow whose state it is, in this build (``ReadableVersions/stateVersion(at:)``).
        var stateVersion: UInt16
        var encode: @Sendable (JSONEncoder) throws -> [UInt8]
    }

    /// Every instance's state at one moment, to encode elsewhere (``ReplicaSet/exportStates()``):
    /// a job per instance in use, and the records at rest as they lie (``RestingInstances/Frozen``),
    /// made into jobs by whoever encodes them.
    struct StateExport: Sendable {
        var live: [StateJob]
        var resting: RestingInstances.Frozen
        var versions: ReadableVersions

        var count: Int { live.count + resting.count }

        /// A job for every instance. An instance at rest holds its state as this build wrote it,
        /// or as a snapshot it was restored from had it, which this build reads at its own version
        /// (``importStates(_:)``).
        func jobs() -> [StateJob] {
            var jobs = live
            jobs.reserveCapacity(count)
            resting.forEach { record in
                let state = record.state
                jobs.append(
                    StateJob(
                        address: record.address, lastSeq: record.lastSeq, ownership: record.ownership,
                        stateVersion: versions.stateVersion(at: record.address), encode: { _ in state }
                    )
                )
            }
            return jobs
        }
    }

    /// How every state is encoded in snapshots and queries: JSON with sorted keys, so the bytes
    /// depend on the state alone.
    static func stateEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// Runs what ``exportStateJobs()`` handed out, in address order (a snapshot's bytes depend on
    /// the states alone); an instance whose state does not encode is left out. The jobs stay where
    /// they are and their positions are sorted: a job holds four references, and moving a million
    /// of them about in a sort was a third of a snapshot's CPU in retains and releases
    /// (``utf8Order(count:_:)`` sorts without touching them).
    ///
    /// `check` is called every 4,096 states, to give up by throwing (``BackgroundWork/Abandonment/check()``).
    static func encode(_ export: StateExport, checking check: () throws -> Void) rethrows -> [SnapshotChunkMessage.Instance] {
        let jobs = export.jobs()
        try check()
        let encoder = stateEncoder()
        let order = utf8Order(count: jobs.count) { jobs[$0].address }
        var instances: [SnapshotChunkMessage.Instance] = []
        instances.reserveCapacity(jobs.count)
        for (done, index) in order.enumerated() {
            if done & 4_095 == 0 { try check() }
            let job = jobs[index]
            guard let state = try? job.encode(encoder) else { continue }
            instances.append(
                SnapshotChunkMessage.Instance(
                    address: job.address, lastSeq: job.lastSeq, state: state, ownership: job.ownership, stateVersion: job.stateVersion
                )
            )
        }
        return instances
    }

    /// Every state, to the end (``encode(_:checking:)``).
    static func encode(_ export: StateExport) -> [SnapshotChunkMessage.Instance] {
        encode(export, checking: {})
    }
}
