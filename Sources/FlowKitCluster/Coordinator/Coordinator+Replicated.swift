import FlowKitCore
import Logging
import ZeroMQ

extension Coordinator {
    /// Serves as one of several coordinators: takes part in the election, copies the leader's log
    /// while standing by, and orders (telling an entry only once every in-sync coordinator holds it)
    /// while leading. The sockets stay bound through every change of role; a standby answers
    /// SUBMIT and HELLO with NOT_LEADER, naming the leader.
    func serveReplicated(
        _ replication: CoordinatorReplication,
        sockets: Sockets,
        loop: IOLoop,
        registry: FlowRegistry,
        stop: StopSignal,
        onReady: @Sendable (CoordinatorEndpoints) -> Void
    ) async throws {
        let storage = try CoordinatorStorage.open(configuration, logger: logger)
        let writer = LogWriter(log: storage.log)
        let quarantine = EntryQuarantine(frameLimit: configuration.transport.maxMessageBytes)
        // Only the snapshot: what the log holds after it may not be committed (and may be cut). The
        // log is read when this coordinator leads (the duplicate table) or learns the commit point.
        let replica = CoordinatorReplica(registry: registry, applied: 0, logger: logger)
        _ = try await storage.restoreSnapshot(into: replica, logger: logger)
        let (lastSeq, lastEpoch) = try await CoordinatorStandby.logEnd(writer)
        let applied = await replica.applied

        // Connected later, to whichever coordinator leads.
        let fetches = try await configuration.transport.openClient(
            .dealer, on: loop, connecting: [], serverKey: configuration.transport.curve?.keyPair.publicKey
        )
        let standby = CoordinatorStandby(
            copy: StandbyCopy(id: replication.id, durable: lastSeq, lastEpoch: lastEpoch, committed: applied),
            writer: writer, socket: fetches, replica: replica, quarantine: quarantine, applied: applied, logger: logger
        )
        let etcd = EtcdElection(client: try EtcdClient(endpoints: replication.etcdEndpoints), prefix: replication.etcdPrefix)
        let election = CoordinatorElection(
            // The others and the nodes know it by its entry in the list: that is what etcd and
            // NOT_LEADER name, whatever address it bound (a pod IP behind a stable name, say).
            settings: .init(id: replication.id, endpoints: replication.coordinators[replication.id] ?? sockets.endpoints, leaseSeconds: replication.leaseSeconds),
            election: etcd,
            logger: logger
        )
        election.setMinimumEpoch(lastEpoch &+ 1)
        let role = ReplicatedRole(replica: replica, standby: standby)
        let (written, writes) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (commitPoints, commitPoint) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingNewest(1))
        let syncServer = SyncServer(
            socket: sockets.sync, writer: writer, source: role, counters: ClusterCounters(), quarantine: quarantine,
            maxRangeCount: configuration.maxRangeCount, logger: logger, written: written
        )

        logger.info(
            "coordinator ready, replicated",
            metadata: [
                "flowkit.id": "\(replication.id)", "flowkit.head": "\(lastSeq)", "flowkit.etcd": "\(replication.etcdEndpoints.joined(separator: ","))",
                "flowkit.submit": "\(sockets.endpoints.submit)", "flowkit.publish": "\(sockets.endpoints.publish)", "flowkit.sync": "\(sockets.endpoints.sync)",
            ]
        )
        onReady(sockets.endpoints)

        /// Starts ordering in `record`'s epoch, from everything the local log holds.
        @Sendable func lead(_ record: LeaderRecord) async throws -> CoordinatorCore {
            await standby.follow(nil)
            let committed = await standby.committed
            let (sequencer, firstSeq) = try await writer.run { [configuration] log in
                var sequencer = Sequencer(epoch: record.epoch, durableHead: log.lastSeq, dedup: DedupTable(window: configuration.dedupWindow))
                try CoordinatorStorage.recover(&sequencer, from: log)
                return (sequencer, log.firstSeq)
            }
            let view = try? await etcd.read().0
            let progress = ReplicationProgress(
                leader: replication.id, members: Array(replication.coordinators.keys), eligible: view?.eligible,
                deposed: await role.lastLeader.map(\.id),
                written: sequencer.durableHead, committed: committed, minInSync: replication.minInSync,
                lagTimeout: UInt64(replication.lagTimeout.microseconds),
                now: WallClock.micros()
            )
            let machine = CoordinatorMachine(
                configuration: configuration, registry: registry, sequencer: sequencer, firstSeq: firstSeq,
                now: WallClock.micros(), replication: progress
            )
            logger.notice(
                "leading",
                metadata: ["flowkit.epoch": "\(record.epoch)", "flowkit.log_end": "\(sequencer.durableHead)", "flowkit.committed": "\(committed)"]
            )
            return CoordinatorCore(
                machine: machine, logger: logger, counters: ClusterCounters(), writer: writer, submitSocket: sockets.submit, publishSocket: sockets.publish, replica: replica,
                writeEligible: { set in (try? await etcd.setEligible(Array(set), leader: record)) ?? false },
                mayAct: { election.mayLead() },
                replicate: { entries in if let last = entries.last { commitPoint.yield(last.seq) } },
                written: writes
            )
        }

        await withDiscardingTaskGroup { group in
            group.addTask { await election.run() }
            group.addTask { [logger] in
                for await next in election.roles {
                    switch next {
                    case .leading(let record):
                        do {
                            await role.lead(try await lead(record), record: record)
                        } catch {
                            logger.error("could not start leading; stepping aside", metadata: ["flowkit.error": "\(error)"])
                        }
                    case .standingBy(let leader):
                        await role.follow(leader)
                    case .seeking:
                        await role.follow(nil)
                    }
                }
            }
            group.addTask(executorPreference: loop) {
                while let batch = try? await sockets.submit.receiveBatch(max: 1_024) {
                    // A core that stepped down meanwhile does not take it (see CoordinatorCore.retire()).
                    if let core = await role.core, await core.handleSubmitBatch(batch) { continue }
                    await role.redirect(batch, socket: sockets.submit)
                }
            }
            group.addTask(executorPreference: loop) {
                while let batch = try? await sockets.publish.receiveBatch(max: 256) { await role.core?.noteSubscriptions(batch) }
            }
            group.addTask { await standby.receive() }
            group.addTask { await every(.milliseconds(100)) { await standby.tick() } }
            group.addTask {
                for await seq in commitPoints { await standby.apply(through: seq) }
            }
            group.addTask { await replica.run() }
            group.addTask { await syncServer.run() }
            group.addTask { [configuration] in
                await every(configuration.heartbeatInterval) {
                    guard let core = await role.core else { return }
                    await core.heartbeat()
                    await core.tickReplication()
                }
            }
            group.addTask { [configuration] in
                await every(configuration.statusInterval) { await role.core?.publishStatus() }
            }
            await stop.wait()
            self.logger.info("coordinator stopping")
            group.cancelAll()
            await replica.finish()
            for socket in [sockets.submit, sockets.publish, sockets.sync, fetches] { await socket.close(linger: configuration.transport.linger) }
        }
        try? await writer.run { log in (log as? DurableEntryLog)?.close() }
    }
}

/// A replicated coordinator's role now: the ordering core while it leads, the standby's copy
/// otherwise. The sync socket serves from whichever it is.
actor ReplicatedRole: SyncSource {
    nonisolated let replica: CoordinatorReplica
    let standby: CoordinatorStandby
    private(set) var core: CoordinatorCore?
    private var reports: Task<Void, Never>?
    /// The leader this coordinator follows, if any.
    private var leader: LeaderRecord?
    /// The last leader this coordinator followed: when it takes over, the deposed one.
    private(set) var lastLeader: LeaderRecord?

    init(replica: CoordinatorReplica, standby: CoordinatorStandby) {
        self.replica = replica
        self.standby = standby
    }

    func lead(_ core: CoordinatorCore, record: LeaderRecord) {
        self.core = core
        leader = record
        reports = Task { await core.receiveReports() }
    }

    func follow(_ leader: LeaderRecord?) async {
        let stepsDown = core
        // Before any suspension: a SUBMIT read meanwhile is redirected to this leader, not to itself.
        core = nil
        self.leader = leader
        if let leader { lastLeader = leader }
        reports?.cancel()
        reports = nil
        if let stepsDown {
            // It wrote its own log while it led: the copy goes on from there, not from before.
            await standby.resumeAfterLeading(committed: await stepsDown.retire().head)
        }
        await standby.follow(leader)
    }

    func committed() async -> (head: UInt64, epoch: UInt32) {
        if let core { return await core.committed() }
        return (await standby.committed, leader?.epoch ?? 0)
    }

    func fetch(_ request: FetchRequest) async throws -> (answer: FetchAnswer, committed: UInt64, epoch: UInt32) {
        guard let core else {
            throw ProtocolError(.coordinatorUnavailable, "this coordinator does not lead; \(leader.map { "\($0) does" } ?? "no leader is known yet")")
        }
        return try await core.fetch(request)
    }

    /// Answers SUBMITs and HELLOs with NOT_LEADER, naming the leader (or no one, yet).
    func redirect(_ batch: [Message], socket: AsyncSocket) {
        for reply in Self.redirections(batch, leader: leader) {
            _ = try? socket.trySend(reply)
        }
    }

    /// The NOT_LEADER replies a coordinator that does not lead sends to the SUBMITs and HELLOs in
    /// `batch`; reports and anything else go unanswered.
    static func redirections(_ batch: [Message], leader: LeaderRecord?) -> [Message] {
        let answer = NotLeaderMessage(
            epoch: leader?.epoch ?? 0, id: leader?.id ?? "",
            endpoints: leader?.endpoints ?? CoordinatorEndpoints(submit: "", publish: "", sync: "")
        )
        return batch.compactMap { message in
            guard let (peer, body) = RouterEnvelope.split(message), let first = body.first,
                let type = (try? WireHeader.read(first, expecting: .submit, .hello, .nodeReport))?.0, type != .nodeReport
            else { return nil }
            return peer.reply(answer.frames)
        }
    }
}
