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
    static func encode(_ jobs: [StateJob]) -> [SnapshotChunkMessage.Instance] {
        let encoder = stateEncoder()
        let order = utf8Order(count: jobs.count) { jobs[$0].address }
        return order.compactMap { index in
            let job = jobs[index]
            guard let state = try? job.encode(encoder) else { return nil }
            return SnapshotChunkMessage.Instance(
                address: job.address, lastSeq: job.lastSeq, state: state, ownership: job.ownership, stateVersion: job.stateVersion
            )
        }
    }
}
