import FlowKitCore
import Foundation
import Logging

/// Every flow instance a process holds, applied entry by entry in seq order. Nodes and the
/// coordinator both keep one: a node runs the effects of the entries it originated; the
/// coordinator's copy never runs effects and serves snapshots and reference digests. Instances are
/// created on their first entry; a restored snapshot's rest as records (``RestingInstances``)
/// until first used. Not thread-safe: its owner applies from one serial context.
@_spi(Benchmarks) public final class ReplicaSet {
    private let registry: FlowRegistry
    /// The version of each flow this build writes and reads.
    let versions: ReadableVersions
    private let context: ReplicaContext
    /// What each flow's replicas share (``FlowReplicas``), by flow name: made with the flow's
    /// first instance.
    private var flows: [String: any ReplicaMaker] = [:]
    private let logger: Logger
    /// The replicas by address text, as entries carry it: the apply path finds an instance without
    /// parsing or validating its address again. One table: each instance's digest lives on it.
    /// Sharded (``ShardedDictionary``): it grows as resting instances wake under load.
    private(set) var replicas = HeldReplicas()
    /// The instances at rest: a restored snapshot's, or unchanged for ``restAfter``.
    let resting: RestingInstances
    /// The digests of the instances, and the rounds that keep them current.
    let book: DigestBook
    /// Entries whose payload did not decode, and quarantined ones; every replica skips the same ones.
    private(set) var skippedEntries = 0
    /// How many instances each process may run effects of.
    let owned = OwnedEffects()
    /// The instances that ran effects here when last looked at, by address text: counting the
    /// running effects walks these, not every instance (a million idle ones cost nothing).
    private var withEffects = HeldReplicas()
    /// The addresses applied to since a node's last local snapshot took them
    /// (``startCopy(at:everything:keptAtMost:)``), while ``tracksChanges``, and until more than
    /// ``changesKeptAtMost`` changed.
    private(set) var changed = ShardedSet<String>()
    /// Whether changes are kept: only for a node's local snapshots (not the coordinator's set, a
    /// monitor's).
    private(set) var tracksChanges = false
    /// Whether every instance counts as changed: changes were never taken, the set was replaced by
    /// a snapshot's instances (``importStates(_:)``) since, or more than ``changesKeptAtMost``
    /// changed (the next snapshot holds every instance anyway, and a set of every address of a
    /// million would cost more than 100 MB).
    private(set) var everythingChanged = true
    /// How many changed addresses are kept before every instance counts as changed.
    private var changesKeptAtMost = Int.max
    /// How many times a snapshot's instances replaced the set (``importStates(_:)``): a copy
    /// taken across the change is abandoned (``StateCopy``).
    private(set) var generation = 0
    /// Up to this seq, an entry may be in its instance's state already: the set was restored from
    /// a copy taken over several turns (``StateCopy``), whose instances are at different seqs, up
    /// to this one. Such an entry (its instance's last seq at or past it) is skipped.
    var skipsAppliedEntriesUpTo: UInt64 = 0
    /// A bug the simulation plants to prove its checks catch it; never set in a process.
    var injectedBug: InjectedBug? {
        didSet { resting.losesARecordWhenEmptying = injectedBug == .emptiedChunkLosesARecord }
    }
    /// How long an instance stays unchanged before it goes to rest, by default (µs): a minute, as
    /// a flow instance idle that long is likely idle for longer (a room, a user, an order).
    static let restAfter: UInt64 = 60_000_000

    /// A passive set, which never runs effects: the coordinator's, a monitor's, a benchmark's.
    public convenience init(registry: FlowRegistry, logger: Logger) {
        self.init(registry: registry, context: .passive(logger: logger), logger: logger)
    }

    /// - Parameters:
    ///   - restAfter: How long an instance stays unchanged before it goes to rest (µs; nil:
    ///     never), as ``RestingInstances`` says.
    ///   - hashedNowAtMost: ``DigestBook/hashedNowAtMost``.
    ///   - restingChunkBytes: ``RestingInstances/chunkBytes`` (the simulation's are small, so that
    ///     its few instances fill chunks and empty them).
    init(
        registry: FlowRegistry, context: ReplicaContext, logger: Logger, restAfter: UInt64? = ReplicaSet.restAfter,
        hashedNowAtMost: Int = DigestBook.defaultHashedNowAtMost, restingChunkBytes: Int = 1 << 20,
        clock: @escaping () -> UInt64 = WallClock.micros
    ) {
        self.resting = RestingInstances(chunkBytes: restingChunkBytes)
        self.registry = registry
        self.versions = ReadableVersions(registry)
        self.context = context
        self.logger = logger
        self.book = DigestBook(clock: clock, resting: resting)
        book.candidates.after = restAfter
        book.hashedNowAtMost = hashedNowAtMost
        book.recordHash = { [unowned self] address, state in
            (flows[address.flow] ?? (try? registry.flow(for: address).replicas(context: context, owned: owned)))?.digestJob(stateJSON: state)
        }
    }

    /// The instances held, at rest or not.
    var count: Int { replicas.count + resting.count }
    /// The instances at rest (``RestingInstances``).
    var restingCount: Int { resting.count }
    /// The effect tasks running now, over every instance; instances whose effects all ended
    /// leave ``withEffects``.
    var runningEffects: Int {
        var total = 0
        for (address, replica) in withEffects {
            let running = replica.runningEffects
            if running == 0 { withEffects[address] = nil }
            total += running
        }
        return total
    }

    /// The instances ``runningEffects`` walks.
    var instancesCountedForEffects: Int { withEffects.count }

    /// Keeps `replica` among those counted, if it runs effects now.
    private func noteEffects(of replica: any FlowReplica) {
        if withEffects[replica.address.description] == nil, replica.runningEffects > 0 {
            withEffects[replica.address.description] = replica
        }
    }

    /// The instance at `address`, woken if it rests; nil if the set holds none there.
    func replica(at address: Address) -> (any FlowReplica)? { replicas[address.description] ?? wake(address.description) }

    /// Wakes an instance at rest: it becomes an object again, with its record's state (decoded at
    /// its first use), last seq, effects' owners and digest.
    private func wake(_ address: String) -> (any FlowReplica)? {
        guard let record = resting.take(address) else { return nil }
        defer { resting.compactIfWorthIt(hashingOut: book.isHashingRecords) }
        // Every record's address and flow were checked when it came to rest.
        guard let replica = try? replicaCreatingIfNeeded(Address(parsing: address)) else { return nil }
        // The replica counts its owners again.
        owned.replace(record.ownership.owners, with: [])
        replica.restoreLater(stateJSON: record.state, lastSeq: record.lastSeq, ownership: record.ownership)
        if let term = record.term {
            if injectedBug == .wokenWithoutItsDigest { return replica }
            replica.digested = DigestedState(seq: record.lastSeq, term: term)
        } else {
            book.noteChanged(replica)
        }
        return replica
    }

    /// Applies one ordered entry, creating its instance if this is its first.
    ///
    /// - Parameter runEffects: Whether this process originated the entry and runs its effects.
    public func apply(_ entry: Entry, runEffects: Bool) {
        if entry.kind == .quarantined {
            skip(entry, because: ProtocolError(.oversize, "the coordinator quarantined this entry: too large for any message"))
            return
        }
        let replica: any FlowReplica
        if let existing = replicas[entry.address] ?? wake(entry.address) {
            if entry.seq <= skipsAppliedEntriesUpTo, existing.lastSeq >= entry.seq { return }
            replica = existing
        } else {
            do {
                replica = try replicaCreatingIfNeeded(try Address(parsing: entry.address))
            } catch {
                // Nodes validate before submitting, so only a node with a different registry gets here.
                skip(entry, because: error)
                return
            }
        }
        do {
            try replica.apply(entry, runEffects: runEffects)
        } catch {
            skip(entry, because: error)
        }
        // Effects start here when this process originated the entry, or a takeover names it.
        if runEffects || entry.kind == .takeover { noteEffects(of: replica) }
        book.noteChanged(replica)
        if tracksChanges, !everythingChanged {
            changed.insert(entry.address)
            if changed.count > changesKeptAtMost { (everythingChanged, changed) = (true, []) }
        }
    }

    private func replicaCreatingIfNeeded(_ address: Address) throws -> any FlowReplica {
        if let existing = replicas[address.description] { return existing }
        let flow = try flows[address.flow] ?? registry.flow(for: address).replicas(context: context, owned: owned)
        flows[address.flow] = flow
        let replica = flow.makeReplica(at: address)
        replicas[address.description] = replica
        return replica
    }

    private func skip(_ entry: Entry, because error: any Error) {
        skippedEntries += 1
        logger.warning(
            "entry skipped",
            metadata: ["flowkit.seq": "\(entry.seq)", "flowkit.address": "\(entry.address)", "flowkit.error": "\(error)"]
        )
    }

    /// ``DigestBook/finishDigestJobs(_:hashingMicros:)``; puts the instances due to rest to rest.
    func finishDigestJobs(_ results: [DigestResult], hashingMicros: UInt64) {
        for (replica, seq, state) in book.finishDigestJobs(results, hashingMicros: hashingMicros) {
            putToRest(replica, encodedAt: seq, state: state)
        }
    }

    /// Puts an instance to rest with its state as encoded at `seq`, if it is still there, digested,
    /// and runs no effects here: not one whose effects this process may run, as waking it would
    /// resume them.
    private func putToRest(_ replica: any FlowReplica, encodedAt seq: UInt64, state: [UInt8]) {
        let address = replica.address.description
        guard replicas[address] === replica, injectedBug == .restedWithAStaleState || RestCandidates.isUnchanged(replica, since: seq),
            let digested = replica.digested, replica.runningEffects == 0, !(context.owner.map(replica.ownership.owners.contains) ?? false)
        else { return }
        replicas[address] = nil
        withEffects[address] = nil
        // Its owners stay counted: the record keeps them.
        resting.insert(address: address, lastSeq: replica.lastSeq, ownership: replica.ownership, term: digested.term, state: state)
    }

    // MARK: Snapshots

    /// Starts keeping the addresses applied to from now on, for a node's local snapshots: each
    /// writes the instances changed since the one before (``startCopy(at:everything:keptAtMost:)``).
    /// - Parameters:
    ///   - everything: Whether every instance counts as changed until changes are next taken (a
    ///     snapshot of all of them is next); false when the set was just restored from the
    ///     snapshots it would follow.
    ///   - keptAtMost: Once more than this many changed, every instance counts as changed: the
    ///     most a snapshot of changes may hold.
    func trackChanges(everything: Bool, keptAtMost: Int = .max) {
        tracksChanges = true
        changed = []
        everythingChanged = everything
        changesKeptAtMost = keptAtMost
    }

    /// The injected bug ``InjectedBug/deltaLosesChangesDuringItsCopy``: changes taken when a copy ends.
    func forgetChangesDuringACopy() {
        if !everythingChanged { changed = [] }
    }

    /// Replaces everything with the instances of a snapshot. Running effects of dropped instances end.
    ///
    /// An instance rests as the snapshot has it (``RestingInstances``) until first used; the
    /// restore's hashing decodes it off the owner's thread. One whose effects this process may
    /// run is an object at once: they resume here.
    /// A state an older version wrote goes through its flow's migrations here, so what rests
    /// and what a snapshot of this set holds is this build's.
    ///
    /// - Throws: ``UnreadableEntry`` for a state of a version this build does not read, and the
    ///   migration's error for one that does not migrate, before anything is replaced.
    /// - Returns: How many states were migrated.
    @discardableResult
    func importStates(_ instances: [SnapshotChunkMessage.Instance]) throws -> Int {
        var instances = instances
        var migrated = 0
        for index in instances.indices {
            if let unreadable = versions.unreadable(instances[index]) { throw unreadable }
            let written = instances[index].stateVersion
            guard written != versions.stateVersion(at: instances[index].address) else { continue }
            let flow = try registry.flow(for: try Address(parsing: instances[index].address))
            instances[index].state = try flow.migrateState(instances[index].state, from: written)
            instances[index].stateVersion = flow.version
            migrated += 1
        }
        for replica in replicas.values { replica.shutDown() }
        replicas.removeAll()
        resting.removeAll()
        withEffects.removeAll()
        book.reset()
        owned.removeAll()
        (everythingChanged, changed) = (true, [])
        generation += 1
        skipsAppliedEntriesUpTo = 0
        resting.reserve(records: instances.count)
        // Instances come in address order: a flow's together, looked up once (an address parsed
        // into a flow name's string each cost a restore of a million a tenth of its time).
        var lastFlow: Substring = ""
        for instance in instances {
            let flow = try Address.plainFlowName(of: instance.address) ?? Substring(Address(parsing: instance.address).flow)
            if flow != lastFlow, flows[String(flow)] == nil {
                flows[String(flow)] = try registry.flow(for: try Address(parsing: instance.address)).replicas(context: context, owned: owned)
            }
            lastFlow = flow
            let ownership = instance.ownership
            if context.owner.map({ !ownership.owners.contains($0) }) ?? true, replicas[instance.address] == nil {
                // A snapshot names each address once; one that named it twice keeps the last.
                let replaced = resting.insert(address: instance.address, lastSeq: instance.lastSeq, ownership: ownership, term: nil, state: instance.state)
                if let replaced { owned.replace(replaced.ownership.owners, with: []) }
                owned.replace([], with: ownership.owners)
                continue
            }
            if let replaced = resting.take(instance.address) { owned.replace(replaced.ownership.owners, with: []) }
            let replica = try replicaCreatingIfNeeded(try Address(parsing: instance.address))
            replica.restoreLater(stateJSON: instance.state, lastSeq: instance.lastSeq, ownership: ownership)
            // A restore resumes this process's own effects.
            noteEffects(of: replica)
            book.noteChanged(replica)
        }
        return migrated
    }

    /// Stops every effect.
    func shutDown() {
        for replica in replicas.values { replica.shutDown() }
    }
}
