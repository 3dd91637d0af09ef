import ZeroMQ

/// What carrying out a coordinator's actions needs of the place it runs: the process's sockets,
/// log and election (``CoordinatorSockets``), or the simulation's network, disk and election
/// service. Each answers at once; what finishes later (a sync, a report's decoding, the election
/// service's answer) comes back to the ``CoordinatorInterpreter`` as an input.
protocol CoordinatorIO: AnyObject {
    /// The time now, in microseconds.
    var now: UInt64 { get }
    /// Whether this coordinator may act as the leader now: its lease holds (always, for one
    /// coordinator).
    func mayAct() -> Bool
    /// Queues a reply on the submit socket; `false` when the queue is full.
    func reply(_ frames: [[UInt8]], to peer: RouterEnvelope) -> Bool
    /// Queues a message to every subscriber; `false` when the queue is full.
    func publish(_ frames: [[UInt8]]) -> Bool
    /// Starts making a group durable.
    func write(_ group: PendingCommit) -> CoordinatorWrite
    /// A group is durable, just before the machine hears of it.
    func madeDurable(_ group: PendingCommit)
    /// The machine acknowledged and published committed entries (alone: when the log made them
    /// durable; replicated: when every in-sync coordinator holds them).
    func acknowledged(_ entries: [Entry])
    /// Hands committed entries to the coordinator's replica.
    func replicate(_ entries: [Entry])
    /// Queues a NODE_REPORT to be decoded off the ordering path; returns the peer whose report
    /// was dropped to make room, if one was.
    func queueReport(_ body: [[UInt8]], from peer: RouterEnvelope) -> RouterEnvelope?
    /// Compares a replica's digests with the references (``DivergenceCheck``) where it does not
    /// hold up the order; what diverged comes back as ``CoordinatorInterpreter/diverged(_:)``.
    func compare(_ digests: [ReportedDigest], reporter: String)
    /// Asks the election service to record the coordinators eligible to lead; `false` when there
    /// is none (one coordinator never leads others). The answer comes back as
    /// ``CoordinatorInterpreter/eligibleWritten(_:written:)``.
    func proposeEligible(_ set: Set<String>) -> Bool
    /// Stops leading for good: the process exits (``CoordinatorMachine/failed(_:error:now:)``).
    func stepDown(_ reason: String)
}

/// How a write a coordinator asked for stands when ``CoordinatorIO/write(_:)`` returns.
///
/// Replicated, a leader hands a group to its standbys once its log has appended it, before its
/// own sync: a sync that fails after that is a ``LeaderSyncFailed``.
enum CoordinatorWrite {
    /// Synced, or refused, before returning (the process writes on the ordering thread).
    case finished(Result<Void, any Error>)
    /// The disk answers later, through ``CoordinatorInterpreter/written(_:_:)``: the simulation's
    /// disk syncs in simulated time. A coordinator that stopped ordering meanwhile never answers.
    case pending
}

/// A replicated leader's sync failed after its group went to the standbys: they may hold what
/// this log could not make durable (``CoordinatorMachine/failed(_:error:now:)``).
struct LeaderSyncFailed: Error, CustomStringConvertible {
    let cause: any Error
    var description: String { "\(cause)" }
}

/// Carries out a ``CoordinatorMachine``'s actions over a ``CoordinatorIO``: the one place a
/// coordinator's decisions meet its sockets, log and election, for the process (``CoordinatorCore``)
/// and the simulation alike, so a seed checks the code that runs in production.
///
/// The leader's fencing is here: a reply or publication leaves, a SUBMIT is ordered and a group
/// is written only while ``CoordinatorIO/mayAct()`` holds. Durable before visible is here too: the machine hears that a group committed only once
/// the write finished.
final class CoordinatorInterpreter<IO: CoordinatorIO> {
    private(set) var machine: CoordinatorMachine
    let io: IO
    /// Where the machine's log lines, counts and hop-trace notes go.
    let sink: ObservationSink
    /// A bug the simulation plants to prove its checks catch it; never set in a process.
    let injectedBug: InjectedBug?
    /// A group the machine asked to commit while the lease did not hold (``commit(_:)``).
    private var heldWrite: PendingCommit?

    init(machine: CoordinatorMachine, io: IO, sink: ObservationSink, injectedBug: InjectedBug? = nil) {
        self.machine = machine
        self.io = io
        self.sink = sink
        self.injectedBug = injectedBug
    }

    var counters: ClusterCounters { sink.counters }

    /// Feeds the machine an input and carries out what it asks for.
    func run(_ input: (inout CoordinatorMachine) throws -> [CoordinatorMachine.Action]) rethrows {
        carryOut(try input(&machine))
    }

    /// Feeds the machine messages read from the submit socket. A leader whose lease does not hold
    /// orders none of their SUBMITs: woken past its lease, it may read one before its election
    /// notices, and an entry it wrote then would be kept should it lead again. The submitter
    /// hears nothing and retries, as when an acknowledgement is fenced.
    func receive(_ messages: [Message], now: UInt64, received: UInt64 = 0) {
        var messages = messages
        if injectedBug != .orderPastTheLease, !io.mayAct() {
            let before = messages.count
            messages.removeAll(where: CoordinatorMachine.isSubmit)
            counters.fencedDrops.add(before - messages.count)
        }
        guard !messages.isEmpty else { return }
        run { $0.receive(messages, now: now, received: received) }
    }

    /// Changes the machine without actions to carry out (what it notes for its status).
    func update(_ change: (inout CoordinatorMachine) -> Void) {
        change(&machine)
        deliverObservations()
    }

    private func deliverObservations() {
        let observed = machine.takeObservations()
        if !observed.isEmpty { sink.deliver(observed) }
    }

    func carryOut(_ actions: [CoordinatorMachine.Action]) {
        defer { deliverObservations() }
        if let group = heldWrite, io.mayAct() {
            heldWrite = nil
            commit(group)
        }
        guard !actions.isEmpty else { return }
        // Checked once per batch of actions: a lease outlives a batch by far more than it takes.
        let mayAct = injectedBug == .fenceOnlyOnTimer || io.mayAct()
        for action in actions {
            switch action {
            case .reply where !mayAct, .publish where !mayAct:
                counters.fencedDrops.add(1)
            case .reply(let frames, let peer):
                // The node retries what it does not hear about; an ack lost here costs a duplicate.
                if !io.reply(frames, to: peer) { counters.acksDropped.add(1) }
            case .publish(let frames, let entries):
                // Subscribers repair what a full queue drops.
                if !io.publish(publishable(frames)), entries > 0 { counters.publishDropped.add(entries) }
            case .commit(let group):
                commit(group)
            case .replicate(let entries):
                // After the group's ACKs and ENTRIES, which come first among its actions.
                io.acknowledged(entries)
                io.replicate(entries)
            case .decodeReport(let body, let peer):
                // Decoded off the ordering path: a report's JSON of a thousand digests took
                // milliseconds, which the order behind it waited for.
                if let dropped = io.queueReport(body, from: peer) {
                    let error = ProtocolError(.overloaded, "1,024 NODE_REPORTs wait to be read; the oldest was dropped")
                    carryOut([machine.reject(error, from: dropped, now: io.now)])
                }
            case .proposeEligible(let set):
                if !io.proposeEligible(set) { machine.eligibleWriteFailed() }
            case .stepDown(let reason):
                io.stepDown(reason)
            }
        }
    }

    /// A publication in the oldest protocol a live node speaks (``VersionAgreement/oldestProtocol``).
    /// What that version cannot carry goes out in this build's: nodes that cannot read it ask for
    /// the range, whose refusal names the entry (only an upgrade out of order meets it).
    private func publishable(_ frames: [[UInt8]]) -> [[UInt8]] {
        let version = machine.publishProtocol
        guard version < WireHeader.version else { return frames }
        return (try? WireDialect.translate(frames, to: version, topic: true)) ?? frames
    }

    private func commit(_ group: PendingCommit) {
        if injectedBug != .orderPastTheLease, !io.mayAct() {
            // Ordered while the lease held; written once it holds again (a renewal that was on its
            // way), or never: the core steps down and its successor reads the log.
            heldWrite = group
            return
        }
        if injectedBug == .acknowledgeBeforeSync {
            // The bug: acknowledged and published while the write may still be lost.
            carryOut(machine.committed(group, now: io.now))
            _ = io.write(group)
            return
        }
        if case .finished(let result) = io.write(group) { written(group, result) }
    }

    /// A write finished: the machine acknowledges and publishes the group, or fails it.
    func written(_ group: PendingCommit, _ result: Result<Void, any Error>) {
        guard injectedBug != .acknowledgeBeforeSync else { return }  // acknowledged when asked for
        switch result {
        case .success:
            io.madeDurable(group)
            carryOut(machine.committed(group, now: io.now))
        case .failure(let error):
            // The bug: the group's seqs are given back as if no standby could hold them.
            let error = injectedBug == .reuseSeqsAfterAFailedSync ? (error as? LeaderSyncFailed)?.cause ?? error : error
            carryOut(machine.failed(group, error: error, now: io.now))
        }
    }

    /// The election service's answer to ``CoordinatorIO/proposeEligible(_:)``.
    func eligibleWritten(_ set: Set<String>, written: Bool) {
        if written {
            carryOut(machine.eligibleWritten(set, now: io.now))
        } else {
            update { $0.eligibleWriteFailed() }
        }
    }

    /// A NODE_REPORT queued by ``CoordinatorIO/queueReport(_:from:)``, decoded (or not): its
    /// digests go to the divergence check, the rest to the machine (for the status).
    func decoded(_ report: Result<NodeReportMessage, any Error>, from peer: RouterEnvelope) {
        switch report {
        case .success(var report):
            io.compare(report.digests, reporter: report.report.name)
            report.digests = []
            carryOut(machine.report(report, now: io.now))
        case .failure(let error):
            carryOut([machine.reject(error, from: peer, now: io.now)])
        }
    }

    /// Replicas disagree: the machine counts and publishes an alarm for each divergence.
    func diverged(_ divergences: [DigestReferences.Divergence]) {
        carryOut(machine.diverged(divergences))
    }
}
