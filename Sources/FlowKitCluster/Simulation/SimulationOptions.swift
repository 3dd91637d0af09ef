/// How a simulated run is shaped. Every seed draws its own network conditions and faults within
/// these bounds.
package struct SimulationOptions: Sendable {
    package var nodes = 3
    /// Coordinators: 1 runs alone; more run replicated, with an election and standbys.
    package var coordinators = 1
    /// Replicated: the fewest coordinators in sync, the leader included, for anything to commit.
    package var minInSync = 2
    /// Simulated seconds of load and faults.
    package var activeSeconds = 4.0
    /// Simulated seconds after every fault is healed, for the cluster to converge.
    package var settleSeconds = 25.0
    /// How many faults a seed injects during the active period.
    package var faults = 4
    /// The mean time between two client emits, in simulated microseconds.
    package var meanEmitInterval: UInt64 = 5_000
    /// The longest a group commit's sync takes, in simulated microseconds.
    package var maxSyncMicros: UInt64 = 3_000
    /// Each coordinator saves a snapshot every this many entries and compacts its log to this
    /// many behind it: small, so a seed compacts several times and a standby down for a moment
    /// falls behind what the leader kept.
    package var snapshotEvery: UInt64 = 150
    package var retainEntries: UInt64 = 40
    /// How many lines of the story a failure prints.
    package var traceLines = 200
    /// A bug to run the simulation with, to show that the checks find it.
    package var bug: InjectedBug?
    /// A rolling upgrade in the middle of the active period: every process moves from build 1 of
    /// the flow to build 2, which writes version 2 and reads version 1 through its steps.
    package var upgrade = false

    package init() {}

    /// The `flowkit simulate` options that shape a run like this one (those that differ from the
    /// defaults), for the replay line of a failing seed.
    package var commandLine: String {
        let defaults = SimulationOptions()
        var words: [String] = []
        if nodes != defaults.nodes { words += ["--nodes", "\(nodes)"] }
        if coordinators != defaults.coordinators { words += ["--coordinators", "\(coordinators)"] }
        if faults != defaults.faults { words += ["--faults", "\(faults)"] }
        if activeSeconds != defaults.activeSeconds { words += ["--active-seconds", "\(activeSeconds)"] }
        if settleSeconds != defaults.settleSeconds { words += ["--settle-seconds", "\(settleSeconds)"] }
        if upgrade { words.append("--upgrade") }
        if let bug { words += ["--bug", bug.rawValue] }
        return words.joined(separator: " ")
    }
}

/// Bugs the simulation can be run with, each one a promise broken on purpose: the simulation
/// tests run each and expect the checks to catch it within a few seeds. They live in the
/// simulation, or in the interpreters the processes run (a process never sets one), never in the
/// machines.
package enum InjectedBug: String, Sendable, CaseIterable {
    /// The coordinator acknowledges and publishes a group as soon as it asks the disk to sync it,
    /// not when the sync is done: a crash in between loses acknowledged entries.
    case acknowledgeBeforeSync = "acknowledge-before-sync"
    /// A restarted coordinator does not relearn which submissions its log holds: retries of
    /// entries ordered before the restart are ordered again.
    case forgetDuplicatesOnRestart = "forget-duplicates-on-restart"
    /// A node applies published entries as they arrive, ahead of a gap, instead of in seq order.
    case applyAheadOfGaps = "apply-ahead-of-gaps"
    /// Replicated: a leader acknowledges what its own log holds, without waiting for the
    /// coordinators in sync: a leader lost right after loses acknowledged entries.
    case commitWithoutStandbys = "commit-without-standbys"
    /// Replicated: a leader checks its lease only when its election's timer fires, not before each
    /// acknowledgement and publication: woken past its lease, it acts on what arrived meanwhile.
    case fenceOnlyOnTimer = "fence-only-on-timer"
    /// Replicated: a leader orders and writes SUBMITs whatever its lease says, fencing only what
    /// it sends: woken past its lease and leading again, it keeps entries no leader could order.
    case orderPastTheLease = "order-past-the-lease"
    /// The coordinator takes a SUBMIT's word for who sent it: it handles each SUBMIT as if the
    /// connection of the node its `origin` names had sent it, so a stranger's forged submissions
    /// are ordered as that node's.
    case trustTheSubmitOrigin = "trust-the-submit-origin"
    /// Nodes' reducers read their process's own UUIDs, time and random numbers instead of values
    /// derived from the entry: every replica computes another state.
    case liveReducerDependencies = "live-reducer-dependencies"
    /// A node's interpreter runs the effects of every entry it applies, not only of its own: every
    /// node runs every effect.
    case effectsOnEveryNode = "effects-on-every-node"
    /// The coordinator takes every effect's submission for a client's: a node paused or cut off
    /// past its lease, whose effects were taken over meanwhile, gets their events ordered when it
    /// goes on, beside the new owner's.
    case noFencing = "no-fencing"
    /// The coordinator never takes over an owner that went down: its effects run nowhere.
    case noTakeover = "no-takeover"
    /// Replicated: a standby's FETCH reports what it received as durable, before its sync is
    /// done: a power loss in between loses entries the leader acknowledged.
    case reportReceivedAsDurable = "report-received-as-durable"
    /// Replicated: a leader whose own sync fails after its group went to the standbys rolls the
    /// group's seqs back, as a coordinator alone does, and orders other entries under them: a
    /// standby that holds the failed group keeps a log that differs from the leader's.
    case reuseSeqsAfterAFailedSync = "reuse-seqs-after-a-failed-sync"
    /// Replicated: a leader answers its standbys' FETCHes without checking its lease: woken past
    /// it, it hands what it ordered meanwhile to a standby that is about to lead.
    case replicatePastTheLease = "replicate-past-the-lease"
    /// Replicated: a coordinator that starts leading takes its log's epochs from when its process
    /// started (an index read when the log opened and never kept up): it misjudges where a
    /// standby's log stops agreeing with its own.
    case epochsOfTheLogAtStart = "epochs-of-the-log-at-start"
    /// Replicated: a standby behind the leader's retained log installs the leader's snapshot into
    /// its log but none of its states into its replica.
    case installWithoutStates = "install-without-states"
    /// The sync socket serves the coordinator's saved snapshot labelled with the seq its replica
    /// has applied: a node that joins through it skips the entries in between.
    case servedSnapshotUnderTheReplicaSeq = "served-snapshot-under-the-replica-seq"
    /// A node wakes an instance at rest without its record's digest: the instance's next change
    /// adds its new term to the combined digest and leaves the old one in.
    case wokenWithoutItsDigest = "woken-without-its-digest"
    /// A node puts an instance to rest with the state its encoding found, even when an entry
    /// changed the instance while the state was encoded off its thread.
    case restedWithAStaleState = "rested-with-a-stale-state"
    /// A node's reports claim its digests current while a backlog of changed instances is still
    /// being hashed off its thread (``DigestBook/settle(held:)``).
    case settledWithChangesUnhashed = "settled-with-changes-unhashed"
    /// A node emptying a chunk of instances at rest that are mostly dead leaves the chunk's last
    /// live record behind, and forgets that instance: woken by its next entry, it starts from
    /// nothing.
    case emptiedChunkLosesARecord = "emptied-chunk-loses-a-record"
    /// Build 2's step from version 1 turns an `append` into nothing (a migration that loses
    /// events): the replicas agree with one another and with the log replayed, yet acknowledged
    /// events are missing from the state. Needs ``SimulationOptions/upgrade``.
    case skipAMigrationStep = "skip-a-migration-step"
    /// A node resuming from a local snapshot copied over several turns applies again the entries
    /// its instances' copies hold already.
    case fuzzyRestoreAppliesEntriesTwice = "fuzzy-restore-applies-entries-twice"
    /// A node's local snapshot of the instances changed since the one before (a delta) takes
    /// the changes when its copy ends, not when it starts: a change applied during the copy to an
    /// instance already copied is in no file, and a node resuming from the chain holds that
    /// instance as it was before.
    case deltaLosesChangesDuringItsCopy = "delta-loses-changes-during-its-copy"

    /// Whether the bug lives in build 2 of the flow (a run with ``SimulationOptions/upgrade``).
    package var needsUpgrade: Bool { self == .skipAMigrationStep }

    /// Whether the bug lives among replicated coordinators (a run with several).
    package var needsReplicatedCoordinators: Bool {
        switch self {
        case .commitWithoutStandbys, .fenceOnlyOnTimer, .orderPastTheLease, .reportReceivedAsDurable, .installWithoutStates, .epochsOfTheLogAtStart,
            .replicatePastTheLease, .reuseSeqsAfterAFailedSync:
            true
        case .acknowledgeBeforeSync, .forgetDuplicatesOnRestart, .applyAheadOfGaps, .trustTheSubmitOrigin, .liveReducerDependencies, .effectsOnEveryNode,
            .noFencing, .noTakeover, .servedSnapshotUnderTheReplicaSeq, .wokenWithoutItsDigest,
            .restedWithAStaleState, .settledWithChangesUnhashed, .emptiedChunkLosesARecord, .skipAMigrationStep,
            .fuzzyRestoreAppliesEntriesTwice, .deltaLosesChangesDuringItsCopy:
            false
        }
    }
}
