extension StandbyCopy {
    /// What the copy asks of the place it runs: the sync socket, the local log and the replica.
    enum Action: Equatable {
        /// Send these frames (a FETCH, or a snapshot's or range's request) to the leader's sync socket.
        case send([[UInt8]])
        /// Append these entry records and make them durable, then report ``appended(through:lastEpoch:now:)``.
        case append([[UInt8]], through: UInt64, lastEpoch: UInt32)
        /// Drop every entry after `keep`, durably, then report ``truncated(durable:lastEpoch:now:)``
        /// with the epoch of the entry at `keep`.
        case truncate(keep: UInt64)
        /// The leader committed up to here, and the copy holds it: apply and serve it.
        case commit(through: UInt64)
        /// Replace the log and the replica with this snapshot: save it, start the log again after
        /// `seq` (whose entry `epoch` ordered) and restore the replica; then report
        /// ``installed(seq:epoch:now:)``, or ``installFailed(now:)``.
        case install(seq: UInt64, epoch: UInt32, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered])
    }
}
