import Logging
import ZeroMQ

/// The coordinator's disk in a simulation: the log keeps what was synced across crashes, and the
/// epoch with it. A group reaches the log only when its sync completes; a crash before that loses
/// it, as a crash loses writes that were never synced.
final class SimulatedDisk {
    let log = MemoryEntryLog()
    var epoch: UInt32 = 0
    /// While full, every commit fails.
    var isFull = false
}

/// One run of the coordinator process in a simulation: the real machine, the real recovery from
/// the log, the real range and snapshot answers, and the coordinator's replica; the simulation is
/// its network, its disk and its clock.
final class SimulatedCoordinator {
    let incarnation: Int
    var machine: CoordinatorMachine
    let replica: CoordinatorReplica
    let disk: SimulatedDisk
    let quarantine = EntryQuarantine(frameLimit: 64 << 20)

    private init(incarnation: Int, machine: CoordinatorMachine, replica: CoordinatorReplica, disk: SimulatedDisk) {
        self.incarnation = incarnation
        self.machine = machine
        self.replica = replica
        self.disk = disk
    }

    /// Starts a coordinator on `disk`: a new epoch, the log replayed into the sequencer's duplicate
    /// table and the replica, exactly as a real start does.
    static func start(
        incarnation: Int, disk: SimulatedDisk, configuration: CoordinatorConfiguration, logger: Logger, now: UInt64, bug: InjectedBug?
    ) async throws -> SimulatedCoordinator {
        disk.epoch += 1
        let storage = CoordinatorStorage(log: disk.log, snapshots: nil, epoch: disk.epoch)
        var sequencer = Sequencer(epoch: disk.epoch, durableHead: disk.log.lastSeq, dedup: DedupTable(window: configuration.dedupWindow))
        let replica = CoordinatorReplica(registry: SimulationFlow.registry, applied: 0, logger: logger)
        let quarantine = EntryQuarantine(frameLimit: 64 << 20)
        _ = try await storage.recover(into: replica, sequencer: &sequencer, quarantine: quarantine, logger: logger)
        if bug == .forgetDuplicatesOnRestart {
            sequencer = Sequencer(epoch: disk.epoch, durableHead: disk.log.lastSeq, dedup: DedupTable(window: configuration.dedupWindow))
        }
        let machine = CoordinatorMachine(
            configuration: configuration, registry: SimulationFlow.registry, sequencer: sequencer, firstSeq: disk.log.firstSeq,
            logger: logger, counters: ClusterCounters(), now: now
        )
        return SimulatedCoordinator(incarnation: incarnation, machine: machine, replica: replica, disk: disk)
    }

    /// What the sync socket answers a request with: one message, or a snapshot's chunks.
    func answerSync(_ body: [[UInt8]]) async -> [[[UInt8]]] {
        do {
            switch try SyncRequest(frames: body) {
            case .range(let request):
                let records = try SyncServer.records(
                    for: request, in: disk.log, committed: machine.committedHead,
                    maxCount: machine.configuration.maxRangeCount, maxBytes: 4 << 20, quarantine: quarantine
                )
                return [RangeMessage.frames(request: request.request, epoch: machine.epoch, head: machine.committedHead, records: records)]
            case .snapshot(let request):
                let (seq, instances) = await replica.snapshot()
                return SyncServer.snapshotChunks(request, seq: seq, epoch: machine.epoch, instances: instances, maxChunkBytes: 1 << 20)
            case .fetch:
                throw ProtocolError(.unknownType, "FETCH is for replicated coordinators; this coordinator runs alone")
            }
        } catch {
            let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
            return [ErrorReply(request: (try? SyncRequest(frames: body))?.request ?? 0, error: protocolError).frames]
        }
    }
}

/// One run of a node process in a simulation: the real machine and real replicas. Effects are not
/// run (they would run on Swift's scheduler, outside the simulation's clock); whether the machine
/// would run them is what the simulation records.
final class SimulatedNode {
    let index: Int
    let incarnation: Int
    var machine: NodeMachine
    let replicas: ReplicaSet
    /// The identity its DEALERs present to the coordinator's ROUTERs.
    let identity: [UInt8]
    /// The last seq this run applied, to check that it applies every seq once, in order.
    var lastApplied: UInt64 = 0

    init(index: Int, incarnation: Int, session: UInt64, configuration: NodeConfiguration, logger: Logger, now: UInt64) {
        self.index = index
        self.incarnation = incarnation
        self.identity = Array("n\(index).\(incarnation)".utf8)
        self.replicas = ReplicaSet(registry: SimulationFlow.registry, logger: logger)
        let info = NodeInfo(name: configuration.name, clientEndpoint: "sim://node-\(index)", flows: ["sim"], pid: Int32(index))
        self.machine = NodeMachine(
            configuration: configuration, registry: SimulationFlow.registry, session: session, info: info, logger: logger,
            counters: ClusterCounters(), now: now
        )
    }

    /// The node and incarnation a coordinator's ROUTER identity names.
    static func parse(identity: [UInt8]) -> (node: Int, incarnation: Int)? {
        let parts = String(decoding: identity, as: UTF8.self).dropFirst().split(separator: ".")
        guard parts.count == 2, let node = Int(parts[0]), let incarnation = Int(parts[1]) else { return nil }
        return (node, incarnation)
    }
}
