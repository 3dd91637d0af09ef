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
    var machine: CoordinatorMachine
    let configuration: CoordinatorConfiguration
    let writer: LogWriter
    let submitSocket: AsyncSocket
    let publishSocket: AsyncSocket
    let replica: CoordinatorReplica
    let counters: ClusterCounters
    /// Writes the set of coordinators eligible to lead to the election service; `nil` for a single
    /// coordinator, which never leads others.
    let writeEligible: (@Sendable (Set<String>) async -> Bool)?
    /// Whether this coordinator may act as the leader now (its lease holds); always for a single
    /// coordinator. Replies and publications are dropped when it may not: the nodes retry, and
    /// repair what they miss from the next leader.
    let mayAct: @Sendable () -> Bool
    /// Hands committed entries to the replica: queued (one coordinator), or read back from the log
    /// up to the commit point (replicated, where a new leader's commit point also covers entries
    /// an earlier leader wrote).
    let replicate: @Sendable ([Entry]) -> Void
    /// Told after each local commit, so held FETCHes are answered (replicated only).
    let written: AsyncStream<Void>.Continuation?
    /// NODE_REPORTs read from the submit socket, for ``receiveReports()`` to decode.
    let reportIntake: AsyncStream<(RouterEnvelope, [[UInt8]])>.Continuation
    let reports: AsyncStream<(RouterEnvelope, [[UInt8]])>
    /// Compares the replicas' digests, off the loop (see ``DigestReferences``).
    let divergence = DivergenceCheck()
    /// Set when the coordinator stepped down (``retire()``): the core orders and writes nothing more.
    private var isRetired = false

    init(
        machine: CoordinatorMachine,
        writer: LogWriter,
        submitSocket: AsyncSocket,
        publishSocket: AsyncSocket,
        replica: CoordinatorReplica,
        writeEligible: (@Sendable (Set<String>) async -> Bool)? = nil,
        mayAct: @escaping @Sendable () -> Bool = { true },
        replicate: (@Sendable ([Entry]) -> Void)? = nil,
        written: AsyncStream<Void>.Continuation? = nil
    ) {
        self.unownedExecutor = submitSocket.loop.serialExecutor.asUnownedSerialExecutor()
        self.writeEligible = writeEligible
        self.mayAct = mayAct
        self.replicate = replicate ?? { replica.enqueue($0) }
        self.written = written
        self.machine = machine
        self.configuration = machine.configuration
        self.counters = machine.counters
        self.writer = writer
        self.submitSocket = submitSocket
        self.publishSocket = publishSocket
        self.replica = replica
        // Bounded: a flood of reports (a fuzzer's) is dropped, not queued.
        (reports, reportIntake) = AsyncStream.makeStream(of: (RouterEnvelope, [[UInt8]]).self, bufferingPolicy: .bufferingNewest(1_024))
    }

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
        guard !isRetired else { return false }
        let now = WallClock.micros()
        perform(machine.receive(messages, now: now, received: configuration.trace == nil ? 0 : now))
        return true
    }

    /// Stops this core for good when its coordinator steps down, and says what its log holds
    /// committed. A SUBMIT batch read just before the step-down can reach the core after it (the
    /// task that read it took the core first); without this, the core would order it and write it
    /// to the log under the standby that now owns the log, an entry of the old term that no
    /// leader committed.
    func retire() -> (head: UInt64, epoch: UInt32) {
        isRetired = true
        return committed()
    }

    /// Subscription messages from the publish socket.
    func noteSubscriptions(_ messages: [Message]) {
        machine.noteSubscriptions(messages)
    }

    /// Decodes NODE_REPORTs off the ordering path and takes in what they say, until cancelled;
    /// their digests are compared on the background thread.
    nonisolated func receiveReports() async {
        for await (peer, body) in reports {
            do {
                var report = try NodeReportMessage(frames: body)
                compareInBackground(report.digests, reporter: report.report.name)
                // The machine keeps the report for the status; the digests are done with.
                report.digests = []
                await note(report)
            } catch {
                await reject(error, from: peer)
            }
        }
    }

    /// Compares a replica's digests with the references on the background thread, at idle
    /// priority: a thousand of them are a millisecond of work, which neither the order nor the
    /// answers wait for. Whatever diverged is alarmed from the loop.
    private nonisolated func compareInBackground(_ digests: [ReportedDigest], reporter: String) {
        guard !digests.isEmpty else { return }
        let (check, loop) = (divergence, submitSocket.loop)
        BackgroundWork.idle.start { [weak self] in
            let found = check.compare(digests, reporter: reporter)
            guard !found.isEmpty else { return }
            Task(executorPreference: loop) { await self?.diverged(found) }
        }
    }

    func note(_ report: NodeReportMessage) {
        perform(machine.report(report, now: WallClock.micros()))
    }

    func reject(_ error: any Error, from peer: RouterEnvelope) {
        perform([machine.reject(error, from: peer, now: WallClock.micros())])
    }

    func heartbeat() {
        perform([machine.heartbeat(now: WallClock.micros())])
    }

    func publishStatus() async {
        let (changed, instances) = await replica.takeChangedDigests(spreadOver: configuration.statusInterval * 0.8)
        perform(machine.status(now: WallClock.micros(), instances: instances))
        compareInBackground(ReportedDigest.list(changed), reporter: "coordinator")
    }

    func diverged(_ divergences: [DigestReferences.Divergence]) {
        perform(machine.diverged(divergences))
    }

    func noteQuarantined(_ seqs: [UInt64]) {
        machine.noteQuarantined(seqs)
    }

    func noteCompacted(firstSeq: UInt64) {
        machine.noteCompacted(firstSeq: firstSeq)
    }

    // MARK: Replication

    /// A standby's FETCH: how far it holds the log, and what to answer.
    func fetch(_ request: FetchRequest) throws -> (answer: FetchAnswer, committed: UInt64, epoch: UInt32) {
        let (answer, actions) = try machine.fetch(request, firstSeq: machine.firstSeq, now: WallClock.micros())
        perform(actions)
        return (answer, machine.committedHead, machine.epoch)
    }

    func tickReplication() {
        perform(machine.tickReplication(now: WallClock.micros()))
    }

    private func noteEligible(_ set: Set<String>, written: Bool) {
        if written {
            perform(machine.eligibleWritten(set, now: WallClock.micros()))
        } else {
            machine.eligibleWriteFailed()
        }
    }

    // MARK: Carrying out

    func perform(_ actions: [CoordinatorMachine.Action]) {
        // Checked once per batch of actions: a lease outlives a batch by far more than it takes.
        let mayAct = writeEligible == nil || self.mayAct()
        for action in actions {
            switch action {
            case .reply where !mayAct, .publish where !mayAct:
                counters.fencedDrops.add(1)
            case .reply(let frames, let peer):
                if (try? submitSocket.trySend(peer.reply(frames))) != true {
                    // The node retries what it does not hear about; an ack lost here costs a duplicate.
                    counters.acksDropped.add(1)
                }
            case .publish(let frames, let entries):
                // Subscribers repair what a full queue drops.
                if (try? publishSocket.trySend(Message(parts: frames))) != true, entries > 0 { counters.publishDropped.add(entries) }
            case .commit(let group):
                commit(group)
            case .replicate(let entries):
                replicate(entries)
            case .decodeReport(let body, let peer):
                // Decoded by ``receiveReports()``: a report's JSON of a thousand digests took
                // milliseconds, which the order behind it waited for.
                if case .dropped(let (oldest, _)) = reportIntake.yield((peer, body)) {
                    reject(ProtocolError(.overloaded, "1,024 NODE_REPORTs wait to be read; the oldest was dropped"), from: oldest)
                }
            case .proposeEligible(let set):
                guard let writeEligible else {
                    machine.eligibleWriteFailed()
                    continue
                }
                Task {
                    let written = await writeEligible(set)
                    self.noteEligible(set, written: written)
                }
            }
        }
    }

    /// Makes a group durable now, on this thread, then hands the outcome to the machine.
    func commit(_ group: PendingCommit) {
        // A retired core's log belongs to the standby.
        guard !isRetired else { return }
        let records = group.records
        let started = ContinuousClock.now
        let startedAt = configuration.trace == nil ? 0 : WallClock.micros()
        do {
            try writer.runHere { log in
                try log.append(records)
                try log.commit()
            }
        } catch {
            perform(machine.failed(group, error: error, now: WallClock.micros()))
            return
        }
        counters.recordCommit(entries: records.count, duration: ContinuousClock.now - started)
        written?.yield()
        let committedAt = WallClock.micros()
        guard let trace = configuration.trace else {
            perform(machine.committed(group, now: committedAt))
            return
        }
        for entry in group.entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .coordinatorCommitStarted, at: startedAt)
            trace.note(entry.seq, .coordinatorCommitted, at: committedAt)
        }
        perform(machine.committed(group, now: committedAt))
        let publishedAt = WallClock.micros()
        for entry in group.entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .coordinatorAcknowledged, at: publishedAt)
            trace.note(entry.seq, .coordinatorPublished, at: publishedAt)
        }
    }
}
