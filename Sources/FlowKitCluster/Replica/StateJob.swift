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

    /// Every instance's state at one moment, to encode elsewhere (``SnapshotCodec/encode(_:sessions:order:checking:)``):
    /// a job per instance in use, and the records at rest as they lie (``RestingInstances/Frozen``),
    /// copied from there by whoever encodes them. An instance at rest holds its state as this build
    /// wrote it, or as a snapshot it was restored from had it, which this build reads at its own
    /// version (``importStates(_:)``).
    struct StateExport: Sendable {
        var live: [StateJob]
        var resting: RestingInstances.Frozen
        var versions: ReadableVersions

        var count: Int { live.count + resting.count }
    }

    /// How every state is encoded in snapshots and queries: JSON with sorted keys, so the bytes
    /// depend on the state alone.
    static func stateEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
