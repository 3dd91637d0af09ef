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
        StateExport(live: replicas.map { stateJob(address: $0, replica: $1) }, resting: resting.frozen, versions: versions)
    }

    /// How many instances changed since changes were last taken (every one, when
    /// ``everythingChanged``).
    var changedCount: Int { everythingChanged || !tracksChanges ? count : changed.count }

    /// Starts a copy of the instances applied to since changes were last taken, or of every
    /// instance, to be taken a slice at a time (``copy(_:atMost:)``) with entries applied between
    /// the slices: a ``StateCopy``. The next changes count from here.
    /// - Parameters:
    ///   - seq: The seq applied now, from which a restore of the copy resumes.
    ///   - everything: Every instance's, whatever changed (as when ``everythingChanged``).
    ///   - keptAtMost: ``trackChanges(everything:keptAtMost:)``, for the changes from here.
    func startCopy(at seq: UInt64, everything: Bool, keptAtMost: Int = .max) -> StateCopy {
        let all = everything || everythingChanged || !tracksChanges
        let addresses = all ? Array(replicas.keys) : changed.elements
        trackChanges(everything: false, keptAtMost: keptAtMost)
        return StateCopy(
            start: seq, everything: all, addresses: addresses, resting: all ? resting.frozen : RestingInstances.Frozen(chunks: [], count: 0),
            versions: versions, generation: generation
        )
    }

    /// Copies the states of the next `atMost` addresses of `copy`, as they are now: an instance
    /// that went to rest since the copy started, from its record. A set replaced by a snapshot's
    /// instances since (``importStates(_:)``) ends the copy, abandoned.
    func copy(_ copy: StateCopy, atMost: Int) {
        guard copy.generation == generation else { return copy.abandon() }
        copy.take(atMost) { address in
            if let replica = replicas[address] { return stateJob(address: address, replica: replica) }
            // At rest, its state is this build's JSON already (``putToRest``, ``importStates(_:)``).
            guard let record = resting.record(at: address) else { return nil }
            let state = record.state
            return StateJob(
                address: address, lastSeq: record.lastSeq, ownership: record.ownership, stateVersion: versions.stateVersion(at: address),
                encode: { _ in state }
            )
        }
        if copy.isDone, injectedBug == .deltaLosesChangesDuringItsCopy { forgetChangesDuringACopy() }
    }

    private func stateJob(address: String, replica: any FlowReplica) -> StateJob {
        StateJob(
            address: address, lastSeq: replica.lastSeq, ownership: replica.ownership, stateVersion: versions.stateVersion(at: address),
            encode: replica.stateJSONJob()
        )
    }

    /// A snapshot's copy of instances taken a slice at a time, between which the owner applies
    /// entries: a *fuzzy* copy, as ARIES takes its checkpoints. An instance changed before its
    /// slice is copied as it is then, one changed after it as it was, each with the seq of its
    /// last entry; so a restore resumes from ``start`` and skips the entries an instance's copy
    /// holds already (``skipsAppliedEntriesUpTo``). Copying a million instances in one go held a
    /// node's loop for more than a second.
    final class StateCopy {
        /// The seq applied when the copy started: where a restore of it resumes.
        let start: UInt64
        /// Whether it copies every instance (a base), or those changed since the last (a delta).
        let everything: Bool
        fileprivate let generation: Int
        /// The addresses in use when it started (a base), or changed before it (a delta).
        private let addresses: [String]
        private var next = 0
        private var live: [StateJob] = []
        /// The highest last seq among the states copied so far (at least ``start``): from there
        /// on, a restore's instances are as the log says.
        private(set) var consistentFrom: UInt64
        /// The records at rest when it started (a base's; none for a delta).
        private let resting: RestingInstances.Frozen
        private let versions: ReadableVersions
        /// Whether the set was replaced by a snapshot's instances during the copy: what it holds
        /// then is no state the log passed through.
        private(set) var isAbandoned = false

        fileprivate init(
            start: UInt64, everything: Bool, addresses: [String], resting: RestingInstances.Frozen, versions: ReadableVersions, generation: Int
        ) {
            (self.start, self.everything, self.addresses, self.resting, self.versions, self.generation) =
                (start, everything, addresses, resting, versions, generation)
            consistentFrom = start
            live.reserveCapacity(addresses.count)
        }

        /// Whether every address was copied (or the copy abandoned).
        var isDone: Bool { isAbandoned || next == addresses.count }
        /// How many addresses are left to copy.
        var remaining: Int { addresses.count - next }

        /// What was copied, to encode elsewhere; once ``isDone`` and not abandoned.
        var states: StateExport { StateExport(live: live, resting: resting, versions: versions) }

        fileprivate func take(_ atMost: Int, _ job: (String) -> StateJob?) {
            let end = next + min(atMost, addresses.count - next)
            for address in addresses[next..<end] {
                guard let copied = job(address) else { continue }
                live.append(copied)
                consistentFrom = max(consistentFrom, copied.lastSeq)
            }
            next = end
        }

        fileprivate func abandon() {
            isAbandoned = true
            live = []
        }
    }
}
