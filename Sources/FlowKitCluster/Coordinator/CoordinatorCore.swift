import CoreMetrics
import FlowKitCore
import Logging
import ZeroMQ

/// The coordinator's serial heart: it runs the ``CoordinatorMachine`` over the coordinator's
/// sockets, its log and its replica, and carries out what the machine asks for.
///
/// Durable before visible: nothing is acknowledged or published before the log has committed it.
/// Each batch read from the submit socket is ordered and committed at once, on the I/O loop's
/// thread; what arrives while a commit syncs waits in the socket and forms the next group. That is
/// the group commit, without a thread hop or a timer between a submission and its commit.
///
/// It lives on the I/O loop of its sockets (its executor is the loop's thread), so a receive
/// handler enters it in the loop turn that read the batch.
actor CoordinatorCore: SyncSource {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    /// The machine and the one interpreter of its actions, over this process's sockets and log.
    let interpreter: CoordinatorInterpreter<CoordinatorProcessIO>
    let configuration: CoordinatorConfiguration
    let replica: CoordinatorReplica
    let counters: ClusterCounters
    /// NODE_REPORTs read from the submit socket, for ``receiveReports()`` to decode.
    let reports: AsyncStream<(RouterEnvelope, [[UInt8]])>
    /// Compares the replicas' digests, off the loop (see ``DigestReferences``).
    let divergence = DivergenceCheck()
    let loop: IOLoop

    /// What a core of a replicated group does beyond a core alone (``ReplicatedGroup``).
    struct Replication: Sendable {
        /// Writes the set of coordinators eligible to lead to the election service.
        var writeEligible: @Sendable (Set<String>) async -> Bool
        /// Whether this coordinator may act as the leader now (its lease holds). Replies and
        /// publications are dropped when it may not: the nodes retry, and repair what they miss
        /// from the next leader.
        var mayAct: @Sendable () -> Bool
        /// Hands committed entries on to the replica, by way of the commit point.
        var replicate: @Sendable ([Entry]) -> Void
        /// Told after each local commit, so held FETCHes are answered.
        var written: AsyncStream<Void>.Continuation
        /// Each group the log appended, for the sync socket to send on while the log syncs it.
        var feed: ReplicationFeed
        /// Stops this coordinator for good (``CoordinatorMachine/failed(_:error:now:)``).
        var stepDown: @Sendable (String) -> Void
    }

    /// - Parameter replication: `nil` for a coordinator alone, which never leads others: no lease
    ///   to check, and committed entries are queued for the replica as they commit.
    init(
        machine: CoordinatorMachine,
        logger: Logger,
        counters: ClusterCounters,
        writer: LogWriter,
        submitSocket: AsyncSocket,
        publishSocket: AsyncSocket,
        replica: CoordinatorReplica,
        replication: Replication? = nil
    ) {
        self.unownedExecutor = submitSocket.loop.serialExecutor.asUnownedSerialExecutor()
        self.loop = submitSocket.loop
        self.configuration = machine.configuration
        self.counters = counters
        self.replica = replica
        // Bounded: a flood of reports (a fuzzer's) is dropped, not queued.
        let (reports, reportIntake) = AsyncStream.makeStream(of: (RouterEnvelope, [[UInt8]]).self, bufferingPolicy: .bufferingNewest(1_024))
        self.reports = reports
        let alwaysMay: @Sendable () -> Bool = { true }
        let enqueue: @Sendable ([Entry]) -> Void = { replica.enqueue($0) }
        // Alone, a failed write is rolled back and refused: it never steps down.
        let neverStepsDown: @Sendable (String) -> Void = { _ in }
        let io = CoordinatorProcessIO(
            configuration: machine.configuration, counters: counters, writer: writer, submitSocket: submitSocket,
            publishSocket: publishSocket, writeEligible: replication?.writeEligible, mayAct: replication?.mayAct ?? alwaysMay,
            replicate: replication?.replicate ?? enqueue, written: replication?.written, feed: replication?.feed,
            stepDown: replication?.stepDown ?? neverStepsDown, reportIntake: reportIntake
        )
        self.interpreter = CoordinatorInterpreter(
            machine: machine, io: io, sink: ObservationSink(logger: logger, counters: counters, trace: machine.configuration.trace)
        )
        io.core = self
    }

    var machine: CoordinatorMachine { interpreter.machine }
    var epoch: UInt32 { machine.epoch }
    var durableHead: UInt64 { machine.durableHead }
    var committedHead: UInt64 { machine.committedHead }

    func committed() -> (head: UInt64, epoch: UInt32) { (machine.committedHead, machine.epoch) }

    // MARK: Inputs

    /// Orders a batch read from the submit socket.
    /// - Returns: `false` when this core has stepped down (``retire()``): the batch is not its to
    ///   order, and the caller answers it as a standby would.
    @discardableResult
    func handleSubmitBatch(_ messages: [Message]) -> Bool {
        guard !interpreter.io.isRetired else { return false }
        let now = WallClock.micros()
        interpreter.receive(messages, now: now, received: configuration.trace == nil ? 0 : now)
        return true
    }

    /// Stops this core for good when its coordinator steps down, and says what its log holds
    /// committed. A SUBMIT batch read just before the step-down can reach the core after it (the
    /// task that read it took the core first); without this, the core would order it and write it
    /// to the log under the standby that now owns the log, an entry of the old term that no
    /// leader committed.
    func retire() -> (head: UInt64, epoch: UInt32) {
        interpreter.io.isRetired = true
        interpreter.io.feed?.stop()
        return committed()
    }

    /// Subscription messages from the publish socket.
    func noteSubscriptions(_ messages: [Message]) {
        interpreter.update { $0.noteSubscriptions(messages) }
    }

    /// Decodes NODE_REPORTs off the ordering path and takes in what they say, until cancelled;
    /// their digests are compared on the background thread.
    nonisolated func receiveReports() async {
        for await (peer, body) in reports {
            await decodedReport(Result { try NodeReportMessage(frames: body) }, from: peer)
        }
    }

    private func decodedReport(_ report: Result<NodeReportMessage, any Error>, from peer: RouterEnvelope) {
        interpreter.decoded(report, from: peer)
    }

    /// Compares a replica's digests with the references on the background thread, at idle
    /// priority: a thousand of them are a millisecond of work, which neither the order nor the
    /// answers wait for. Whatever diverged is alarmed from the loop.
    nonisolated func compareInBackground(_ digests: [ReportedDigest], reporter: String) {
        guard !digests.isEmpty else { return }
        let (check, loop) = (divergence, loop)
        BackgroundWork.idle.start { [weak self] in
            let found = check.compare(digests, reporter: reporter)
            guard !found.isEmpty else { return }
            Task(executorPreference: loop) { await self?.diverged(found) }
        }
    }

    func heartbeat() {
        interpreter.run { [$0.heartbeat(now: WallClock.micros())] }
    }

    /// A status round now if an owner of effects is no longer live (``CoordinatorMachine/ownerLapsed(now:)``);
    /// checked every heartbeat, which costs a look at the members.
    func publishStatusIfOwnerLapsed() async {
        guard machine.ownerLapsed(now: WallClock.micros()) else { return }
        await publishStatus()
    }

    func publishStatus() async {
        let (changed, instances) = await replica.takeChangedDigests(spreadOver: configuration.statusInterval * 0.8)
        let ownership = await replica.ownership(live: machine.liveOwners(now: WallClock.micros()))
        interpreter.run { $0.status(now: WallClock.micros(), instances: instances, ownership: ownership) }
        compareInBackground(ReportedDigest.list(changed, versions: replica.flowVersions), reporter: "coordinator")
    }

    func diverged(_ divergences: [DigestReferences.Divergence]) {
        interpreter.diverged(divergences)
    }

    func noteQuarantined(_ seqs: [UInt64]) {
        interpreter.update { $0.noteQuarantined(seqs) }
    }

    func noteCompacted(firstSeq: UInt64) {
        interpreter.update { $0.noteCompacted(firstSeq: firstSeq) }
    }

    // MARK: Replication

    /// A standby's FETCH: how far it holds the log, and what to answer.
    func fetch(_ request: FetchRequest) throws -> (answer: FetchAnswer, committed: UInt64, epoch: UInt32) {
        var answer: FetchAnswer?
        try interpreter.run { machine in
            let (fetched, actions) = try machine.fetch(request, firstSeq: machine.firstSeq, now: WallClock.micros())
            answer = fetched
            return actions
        }
        return (answer!, machine.committedHead, machine.epoch)
    }

    /// Standbys' durable ends, checked against the sync server's feed (``ReplicationFeed``).
    func confirm(_ reports: [String: UInt64]) {
        let now = WallClock.micros()
        for (id, durable) in reports {
            interpreter.run { $0.confirm(id, durable: durable, now: now) }
        }
    }

    func tickReplication() {
        interpreter.run { $0.tickReplication(now: WallClock.micros()) }
    }

    func eligibleWritten(_ set: Set<String>, written: Bool) {
        interpreter.eligibleWritten(set, written: written)
    }
}
