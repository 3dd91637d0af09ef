import Foundation
import Synchronization
import Logging
import ZeroMQ

/// What a write to a full simulated disk throws.
struct SimulatedDiskFull: Error, CustomStringConvertible {
    var description: String { "no space left on the simulated disk" }
}

/// One run of a coordinator process in a simulation: the real machines (``CoordinatorMachine``
/// while it orders; for a replicated coordinator also its ``ElectionMachine`` and, while it
/// stands by, its ``StandbyCopy``), the real recovery from the log, the real range and snapshot
/// answers, and the coordinator's replica; the simulation is its network, its disk and its clock.
final class SimulatedCoordinator {
    let index: Int
    let incarnation: Int
    let configuration: CoordinatorConfiguration
    let logger: Logger
    /// Ordering, through the interpreter the processes run: always when it runs alone; while it
    /// leads, replicated.
    var interpreter: CoordinatorInterpreter<SimulatedCoordinatorIO>?
    var machine: CoordinatorMachine? { interpreter?.machine }
    unowned let simulation: ClusterSimulation
    lazy var io = SimulatedCoordinatorIO(simulation: simulation, coordinator: self)
    /// Its log lines go to the simulation's trace; its counts are the simulation's, across runs.
    private var sink: ObservationSink { ObservationSink(logger: logger, counters: simulation.coordinatorCounters, trace: nil) }
    let replica: CoordinatorReplica
    let disk: SimulatedDisk
    let quarantine = EntryQuarantine(frameLimit: 64 << 20)
    /// Writes asked for and not yet synced, by id: a change of role lands them first (the real
    /// coordinator's writes go through one writer, in order, whatever its role does meanwhile).
    var writes: [UInt64: SimulatedWrite] = [:]
    var nextWrite: UInt64 = 1

    // Replicated only.
    var election: ElectionMachine?
    var copy: StandbyCopy?
    /// The leader it follows (``CoordinatorRole``), and the last one: deposed when it takes over.
    var following: LeaderRecord?
    var lastLeader: LeaderRecord?
    /// The last seq applied to the replica.
    var applied: UInt64 = 0
    /// The log's epochs when this incarnation started (the injected bug ``InjectedBug/epochsOfTheLogAtStart``).
    let epochsAtStart: EpochHistory
    /// The latest FETCH of each standby, held while there is nothing new, as the sync server holds them.
    var heldFetches: [String: (peer: RouterEnvelope, request: FetchRequest, since: UInt64)] = [:]
    /// Requests to the election service without an answer yet, by id.
    var electionRequests: [UInt64: (request: SimulatedEtcd.Request, askedAt: UInt64)] = [:]
    /// The election service's revision last seen: older watch events are ignored.
    var viewRevision: Int64 = 0

    var id: String { Self.id(index) }
    var isReplicated: Bool { election != nil }

    static func id(_ index: Int) -> String { "c\(index)" }

    static func endpoints(_ index: Int) -> CoordinatorEndpoints {
        CoordinatorEndpoints(submit: "sim://c\(index)/submit", publish: "sim://c\(index)/publish", sync: "sim://c\(index)/sync")
    }

    /// The identity its standby DEALER presents to the leader's sync socket.
    var identity: [UInt8] { Array("c\(index).\(incarnation)".utf8) }

    private init(
        simulation: ClusterSimulation, index: Int, incarnation: Int, configuration: CoordinatorConfiguration, logger: Logger,
        replica: CoordinatorReplica, disk: SimulatedDisk
    ) {
        self.simulation = simulation
        self.index = index
        self.incarnation = incarnation
        self.configuration = configuration
        self.logger = logger
        self.replica = replica
        self.disk = disk
        self.epochsAtStart = disk.log.epochs
    }

    /// Starts a coordinator that runs alone on `disk`, as ``Coordinator`` does: a new epoch, and
    /// it leads at once.
    static func start(
        simulation: ClusterSimulation, index: Int, incarnation: Int, disk: SimulatedDisk, configuration: CoordinatorConfiguration, logger: Logger,
        now: UInt64, bug: InjectedBug?
    ) async throws -> SimulatedCoordinator {
        disk.epoch += 1
        let replica = CoordinatorReplica(registry: simulation.builds.registry(ofCoordinator: index), applied: 0, dedupWindow: configuration.dedupWindow, logger: logger)
        let coordinator = SimulatedCoordinator(
            simulation: simulation, index: index, incarnation: incarnation, configuration: configuration, logger: logger, replica: replica, disk: disk
        )
        try await coordinator.restoreSnapshot()
        try await coordinator.lead(LeaderRecord(id: "coordinator", epoch: disk.epoch, endpoints: endpoints(index)), group: nil, now: now, bug: bug)
        return coordinator
    }

    /// Starts one of several coordinators on `disk`, as a ``Coordinator`` of a ``ReplicatedGroup`` does: it
    /// copies the log from whoever leads until the election makes it the leader.
    static func startReplicated(
        simulation: ClusterSimulation, index: Int, incarnation: Int, disk: SimulatedDisk, configuration: CoordinatorConfiguration, logger: Logger
    ) async throws -> SimulatedCoordinator {
        let replica = CoordinatorReplica(registry: simulation.builds.registry(ofCoordinator: index), applied: 0, dedupWindow: configuration.dedupWindow, logger: logger)
        let coordinator = SimulatedCoordinator(
            simulation: simulation, index: index, incarnation: incarnation, configuration: configuration, logger: logger, replica: replica, disk: disk
        )
        try await coordinator.restoreSnapshot()
        let end = disk.end
        // What its snapshot covers is committed (``ReplicatedGroup``'s join: the replica's applied seq).
        coordinator.copy = StandbyCopy(id: coordinator.id, durable: end.seq, lastEpoch: end.epoch, committed: coordinator.applied)
        coordinator.copy!.floor = disk.log.firstSeq - 1
        var election = ElectionMachine(settings: .init(id: coordinator.id, endpoints: endpoints(index), leaseSeconds: Int64(SimulatedEtcd.leaseSeconds)))
        election.minimumEpoch = end.epoch &+ 1
        coordinator.election = election
        return coordinator
    }

    /// Starts ordering in `record`'s epoch from everything its log holds, alone or as the leader
    /// of `group`, as ``Coordinator``'s `lead(_:in:group:deposed:)` does: one pass over what the
    /// replica has not applied completes the duplicate table and brings the replica up to the
    /// commit point, the log's epochs as it kept them; replicated, the
    /// deposed leader lags from the start and the set of coordinators in sync is the one the
    /// election service holds.
    func lead(
        _ record: LeaderRecord, group: (members: [String], eligible: [String]?, minInSync: Int)?, now: UInt64, bug: InjectedBug?
    ) async throws {
        landWrites()
        _ = copy?.follow(nil, now: now)
        let committed = copy?.committed ?? disk.log.lastSeq
        // The bug: the log's epochs as they were when this incarnation started, not as it kept them.
        let epochs = bug == .epochsOfTheLogAtStart ? epochsAtStart : disk.log.epochs
        var sequencer = Sequencer(epoch: record.epoch, durableHead: disk.log.lastSeq, dedup: await replica.sessions, history: epochs)
        let recovered = try await CoordinatorStorage.recover(
            &sequencer, replica: replica, from: await replica.firstUnlearned(inLogFrom: disk.log.firstSeq), committed: committed,
            quarantine: quarantine
        ) { [disk] seq in try disk.log.read(from: seq, maxCount: 10_000, maxBytes: 16 << 20) }
        applied = await replica.applied
        if bug == .forgetDuplicatesOnRestart {
            sequencer = Sequencer(epoch: record.epoch, durableHead: disk.log.lastSeq, dedup: DedupTable(window: configuration.dedupWindow), history: epochs)
        }
        let progress = group.map { group in
            ReplicationProgress(
                leader: id, members: group.members, eligible: group.eligible, deposed: lastLeader?.id, written: sequencer.durableHead,
                committed: committed, minInSync: group.minInSync, lagTimeout: 1_000_000, now: now
            )
        }
        let machine = CoordinatorMachine(
            configuration: configuration, registry: simulation.builds.registry(ofCoordinator: index), sequencer: sequencer, firstSeq: disk.log.firstSeq,
            now: now, replication: bug == .commitWithoutStandbys ? nil : progress, fences: recovered.fences
        )
        interpreter = CoordinatorInterpreter(machine: machine, io: io, sink: sink, injectedBug: bug)
        following = group == nil ? nil : record
        heldFetches = [:]
    }

    /// Stops ordering, if it did, and follows `leader` (nil: none known): the copy goes on from
    /// what the log holds now.
    func follow(_ leader: LeaderRecord?, now: UInt64) -> [StandbyCopy.Action] {
        if let machine {
            landWrites()
            let end = disk.end
            copy!.resume(durable: end.seq, lastEpoch: end.epoch, committed: machine.committedHead)
            interpreter = nil
            heldFetches = [:]
        }
        following = leader
        if let leader { lastLeader = leader }
        return copy!.follow(leader, now: now)
    }

    /// Where the sync socket's answers stand: what may be served, in which term.
    var committed: (head: UInt64, epoch: UInt32) {
        if let machine { return (machine.committedHead, machine.epoch) }
        return (copy?.committed ?? 0, following?.epoch ?? 0)
    }

    /// Applies what is committed to the replica, from the log's newest records in memory or read
    /// back from it (``CoordinatorStandby/apply(through:)``).
    func applyCommitted(through seq: UInt64) async {
        while applied < seq {
            guard let records = try? disk.log.readPass(from: applied + 1), !records.isEmpty,
                let entries = try? records.prefix(Int(seq - applied)).map({ try quarantine.entry($0).entry }), let last = entries.last
            else { return }
            await replica.applyNow(entries)
            applied = last.seq
        }
    }

    /// What the sync socket answers a RANGE or SNAPSHOT with: one message, or a snapshot's chunks.
    /// A SNAPSHOT is answered with the disk's snapshot while few enough entries follow it, else
    /// with the replica's states (``SavedSnapshots``).
    func answerSync(_ request: SyncRequest, maxReplay: UInt64, bug: InjectedBug?) async -> [[[UInt8]]] {
        do {
            switch request {
            case .range(let range):
                let (head, epoch) = committed
                let records = try SyncServer.records(
                    for: range, in: disk.log, committed: head, maxCount: configuration.maxRangeCount, maxBytes: 4 << 20, quarantine: quarantine
                )
                return [RangeMessage.frames(request: range.request, epoch: epoch, head: head, records: records)]
            case .snapshot(let snapshot):
                var (seq, instances, sessions) = await replica.snapshot()
                if let saved = disk.snapshot, saved.seq <= seq,
                    SavedSnapshots.serves(tail: seq - saved.seq, instances: saved.instances.count, maxReplay: maxReplay)
                {
                    (instances, sessions) = (saved.instances, saved.sessions)
                    // The bug: the saved states labelled with the replica's seq.
                    if bug != .servedSnapshotUnderTheReplicaSeq { seq = saved.seq }
                }
                simulation.trace.note(at: simulation.now, "\(id) serves a snapshot at \(seq) (disk snapshot \(disk.snapshot?.seq ?? 0), applied \(applied), log \(disk.log.firstSeq)…\(disk.log.lastSeq))")
                // Served as its bytes, as the process serves it.
                let records = try SnapshotRecords(SnapshotCodec.encode(instances, sessions: sessions))
                return try SyncServer.snapshotChunks(snapshot, seq: seq, epoch: committed.epoch, records: records, maxChunkBytes: 1 << 20)
            case .fetch:
                throw ProtocolError(.unknownType, "FETCH is for replicated coordinators; this coordinator runs alone")
            }
        } catch {
            let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
            return [ErrorReply(request: request.request, error: protocolError).frames]
        }
    }
}

/// One run of a node process in a simulation: the real machine and real replicas. The replicas run
/// the effects of the node's own entries; the simulation's flow's effects only wait to be
/// cancelled, so they send nothing the seed does not decide, and the checks find them running.
final class SimulatedNode {
    let index: Int
    let incarnation: Int
    /// The machine and the replicas, through the interpreter the processes run.
    private(set) var interpreter: NodeInterpreter<SimulatedNodeIO>!
    var machine: NodeMachine { interpreter.machine }
    var replicas: ReplicaSet { interpreter.replicas }
    /// The identity its DEALERs present to the coordinator's ROUTERs.
    let identity: [UInt8]
    /// The last seq this run applied, to check that it applies every seq once, in order.
    var lastApplied: UInt64 = 0
    /// The local snapshot it is copying, a few instances per tick, and the seq of the file it
    /// follows (nil: a base).
    var localCopy: (follows: UInt64?, copy: ReplicaSet.StateCopy)?
    /// The files of its local snapshots this run saved or resumed from.
    var localChain = LocalSnapshots.Chain()

    /// - Parameter registry: What it runs (``SimulationBuilds/registry(ofNode:)``).
    init(
        simulation: ClusterSimulation, index: Int, incarnation: Int, session: UInt64, configuration: NodeConfiguration, registry: FlowRegistry,
        logger: Logger, bug: InjectedBug?
    ) {
        self.index = index
        self.incarnation = incarnation
        self.identity = Array("n\(index).\(incarnation)".utf8)
        // The replicas' hashing budget runs on the simulated clock, so a seed decides what is hashed.
        // Effects run as in a node (their events are sent by ``tickEffects(now:)``); a takeover
        // that names this process resumes them here.
        var context = ReplicaContext.passive(logger: logger)
        context.owner = EffectOwner(node: configuration.id, session: session)
        // Instances go to rest after 100 ms unchanged, in chunks of 256 bytes (a few records
        // each, some records larger than one), and any changed instance is settled off the
        // thread, so that seeds rest, wake and settle instances often, and fill and empty chunks.
        let replicas = ReplicaSet(
            registry: registry, context: context, logger: logger, restAfter: 100_000, hashedNowAtMost: 0, restingChunkBytes: 1024
        ) { [trace = simulation.trace] in
            trace.clock.load(ordering: .relaxed)
        }
        replicas.injectedBug = bug
        let info = NodeInfo(
            name: configuration.name, clientEndpoint: "sim://node-\(index)", flows: ["sim"], pid: Int32(index), flowVersions: registry.versionsAboveOne
        )
        let machine = NodeMachine(configuration: configuration, registry: registry, session: session, info: info, now: simulation.now)
        interpreter = NodeInterpreter(
            machine: machine, replicas: replicas, io: SimulatedNodeIO(simulation: simulation, node: self),
            sink: ObservationSink(logger: logger, counters: ClusterCounters(), trace: nil), injectedBug: bug
        )
    }

    /// When its running effects last sent their ticks, and how many it sent.
    var lastEffectTicks: UInt64 = 0
    var effectTicksSent = 0

    /// The process index and incarnation a ROUTER identity names (`n1.2`: node 1's second run;
    /// `c0.3`: coordinator 0's third).
    static func parse(identity: [UInt8]) -> (index: Int, incarnation: Int)? {
        let parts = String(decoding: identity, as: UTF8.self).dropFirst().split(separator: ".")
        guard parts.count == 2, let node = Int(parts[0]), let incarnation = Int(parts[1]) else { return nil }
        return (node, incarnation)
    }
}
