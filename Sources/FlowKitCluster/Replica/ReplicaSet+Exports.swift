import FlowKitCore

/// What a snapshot copies of a ``ReplicaSet``: every instance's state (a coordinator's snapshot, a
/// node's base), or the instances changed since the last (a node's delta).
extension ReplicaSet {
    /// Every instance's state, as JSON, with the seq of its last entry, in address order: what a
    /// snapshot of them holds (``SnapshotCodec``), read back.
    func exportStates() -> [SnapshotChunkMessage.Instance] {
        do {
            return try SnapshotChunkMessage.instances(inRecords: SnapshotCodec.encode(exportStateJobs()).bytes)
        } catch {
            preconditionFailure("a snapshot's records, written a moment ago, did not read back: \(error)")
        }
    }

    /// Every instance's state, copied now, to encode as JSON elsewhere (``SnapshotCodec/encode(_:sessions:order:checking:)``): a process
    /// with many instances does not stall its thread encoding them all, nor sorting them (ten
    /// thousand addresses took the coordinator's replica milliseconds to sort), nor making a job
    /// of each record at rest (a million took a node's loop about a second): those stay in their
    /// arena, shared until the set next changes it.
    func exportStateJobs() -> StateExport {
        let live = replicas.map { address, replica in
            StateJob(
                address: address, lastSeq: replica.lastSeq, ownership: replica.ownership, stateVersion: versions.stateVersion(at: address),
                encode: replica.stateJSONJob()
            )
        }
        return StateExport(live: live, resting: resting.frozen, versions: versions)
    }

    /// How many instances changed since changes were last taken (every one, when
    /// ``everythingChanged``).
    var changedCount: Int { everythingChanged || !tracksChanges ? count : changed.count }

    /// The states of the instances applied to since changes were last taken, copied now as
    /// ``exportStateJobs()`` copies them all (one that went to rest since is copied from its
    /// record), in no order; the next changes count from here.
    /// - Parameters:
    ///   - everything: Every instance's, whatever changed (as when ``everythingChanged``).
    ///   - keptAtMost: ``trackChanges(everything:keptAtMost:)``, for the changes from here.
    func takeChangedStateJobs(everything: Bool, keptAtMost: Int = .max) -> StateExport {
        let addresses = changed
        let all = everything || everythingChanged || !tracksChanges
        trackChanges(everything: false, keptAtMost: keptAtMost)
        guard !all else { return exportStateJobs() }
        var live: [StateJob] = []
        live.reserveCapacity(addresses.count)
        for address in addresses {
            if let replica = replicas[address] {
                live.append(
                    StateJob(
                        address: address, lastSeq: replica.lastSeq, ownership: replica.ownership, stateVersion: versions.stateVersion(at: address),
                        encode: replica.stateJSONJob()
                    )
                )
            } else if let record = resting.record(at: address) {
                // At rest, its state is this build's JSON already (``putToRest``, ``importStates(_:)``).
                let state = record.state
                live.append(
                    StateJob(
                        address: address, lastSeq: record.lastSeq, ownership: record.ownership, stateVersion: versions.stateVersion(at: address),
                        encode: { _ in state }
                    )
                )
            }
        }
        return StateExport(live: live, resting: RestingInstances.Frozen(chunks: [], count: 0), versions: versions)
    }
}
