import FlowKitLog
import FlowKitCore
import Logging
import ZeroMQ

/// What one coordinator of a replicated group has beyond a coordinator alone: the election, the
/// standby's copy of the leader's log, and the streams between the leading core and both.
///
/// The sockets stay bound through every change of role; a standby answers SUBMIT and HELLO with
/// NOT_LEADER, naming the leader (``CoordinatorRole``).
struct ReplicatedGroup: Sendable {
    let replication: CoordinatorReplication
    let etcd: EtcdElection
    let election: CoordinatorElection
    let standby: CoordinatorStandby
    /// The standby's DEALER to whichever coordinator leads.
    let fetches: AsyncSocket
    /// Told after each of the leader's local commits, so held FETCHes are answered.
    let written: AsyncStream<Void>
    let writes: AsyncStream<Void>.Continuation
    /// The leader's latest groups, for its sync socket.
    let feed = ReplicationFeed()
    /// Told when standbys' durable ends wait in the feed for the leading core.
    let reports: AsyncStream<Void>
    let reported: AsyncStream<Void>.Continuation
    /// The leader's commit point, for the replica (read back from the log: a new leader's commit
    /// point also covers entries an earlier leader wrote).
    let commitPoints: AsyncStream<UInt64>
    let commitPoint: AsyncStream<UInt64>.Continuation

    /// Sets up the copy from the log's end and the election, above the last epoch the log holds.
    static func join(
        _ replication: CoordinatorReplication, parts: CoordinatorParts, snapshots: SnapshotStore?, configuration: CoordinatorConfiguration,
        logger: Logger
    ) async throws -> ReplicatedGroup {
        let (lastSeq, lastEpoch) = try await CoordinatorStandby.logEnd(parts.writer)
        let floor = try await parts.writer.run { log in log.firstSeq - 1 }
        let applied = await parts.replica.applied
        // Connected later, to whichever coordinator leads.
        let fetches = try await configuration.transport.openClient(
            .dealer, on: parts.sockets.sync.loop, connecting: [], serverKey: configuration.transport.curve?.keyPair.publicKey
        )
        var copy = StandbyCopy(id: replication.id, durable: lastSeq, lastEpoch: lastEpoch, committed: applied)
        copy.floor = floor
        let standby = CoordinatorStandby(
            copy: copy,
            writer: parts.writer, socket: fetches, replica: parts.replica, quarantine: parts.quarantine, applied: applied,
            snapshots: snapshots, trace: configuration.trace, logger: logger
        )
        let etcd = EtcdElection(client: try EtcdClient(endpoints: replication.etcdEndpoints), prefix: replication.etcdPrefix)
        let election = CoordinatorElection(
            // The others and the nodes know it by its entry in the list: that is what etcd and
            // NOT_LEADER name, whatever address it bound (a pod IP behind a stable name, say).
            settings: .init(
                id: replication.id, endpoints: replication.coordinators[replication.id] ?? parts.sockets.endpoints, leaseSeconds: replication.leaseSeconds
            ),
            election: etcd,
            logger: logger
        )
        election.setMinimumEpoch(lastEpoch &+ 1)
        let (written, writes) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (commitPoints, commitPoint) = AsyncStream.makeStream(of: UInt64.self, bufferingPolicy: .bufferingNewest(1))
        let (reports, reported) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        return ReplicatedGroup(
            replication: replication, etcd: etcd, election: election, standby: standby, fetches: fetches,
            written: written, writes: writes, reports: reports, reported: reported, commitPoints: commitPoints, commitPoint: commitPoint
        )
    }

    /// Takes part in the election and keeps the copy, in `tasks`, until they are cancelled: each
    /// change of role leads (with `lead`) or follows.
    func run(
        in tasks: inout DiscardingTaskGroup, role: CoordinatorRole, logger: Logger,
        lead: @escaping @Sendable (LeaderRecord) async throws -> CoordinatorCore
    ) {
        tasks.addTask { await election.run() }
        tasks.addTask {
            for await next in election.roles {
                switch next {
                case .leading(let record):
                    do {
                        role.lead(try await lead(record), record: record)
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
        // The copy and the reports run on the sync sockets' thread, where their messages arrive.
        let syncLoop = fetches.loop
        tasks.addTask(executorPreference: syncLoop) { await standby.receive() }
        // Standbys' durable ends, checked by the sync server against the feed, to the leading core.
        tasks.addTask(executorPreference: syncLoop) { [feed] in
            for await _ in reports {
                let reports = feed.takeReports()
                if let core = role.core, !reports.isEmpty { await core.confirm(reports) }
            }
        }
        tasks.addTask { await every(.milliseconds(100)) { await standby.tick() } }
        tasks.addTask {
            for await seq in commitPoints { await standby.apply(through: seq) }
        }
    }

    /// What the leading core needs of the group: the eligible set written to etcd, the lease
    /// checked before every reply, the commit point handed on, held FETCHes woken, and a way out
    /// (`stepDown`: the feed answers no more, then the process stops).
    func replication(for record: LeaderRecord, stepDown: @escaping @Sendable (String) -> Void) -> CoordinatorCore.Replication {
        CoordinatorCore.Replication(
            writeEligible: { [etcd] set in (try? await etcd.setEligible(Array(set), leader: record)) ?? false },
            mayAct: { [election] in election.mayLead() },
            replicate: { [commitPoint, feed] entries in
                guard let last = entries.last else { return }
                feed.noteCommitted(last.seq)
                commitPoint.yield(last.seq)
            },
            written: writes, feed: feed,
            stepDown: { [feed] reason in
                feed.stop()
                stepDown(reason)
            }
        )
    }
}
