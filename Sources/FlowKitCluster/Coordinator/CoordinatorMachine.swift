import DequeModule
import Logging
import ZeroMQ

/// The coordinator's behaviour as a state machine without I/O.
///
/// Its inputs are what the coordinator's sockets read, the log's outcome for each group commit
/// and the ticks of its timers, each with the time (microseconds since the Unix epoch); its
/// outputs are ``Action``s: messages to send and publish, groups to make durable, entries for the
/// coordinator's replica. ``CoordinatorInterpreter`` carries them out, over ZeroMQ and the segment
/// log in the process and over a simulated network and disk in the simulation. It has no effects of
/// its own: what it would log, count or trace it observes (``Observations``), and its interpreter
/// delivers.
///
/// One group commit is in flight at a time: what is ordered while the log writes waits in the
/// intake and forms the next group, asked for as soon as the log reports on the previous one.
///
/// **Replicated** (a ``ReplicationProgress``, when this coordinator leads others): a group the
/// local log holds is not yet told to anyone. It waits until every in-sync coordinator holds it
/// (their FETCHes say so: ``fetched(by:durable:now:)``), then is acknowledged and published. The
/// head nodes see (WELCOME, HEARTBEAT, ACK, status) is that commit point, never the local log's end.
struct CoordinatorMachine {
    let configuration: CoordinatorConfiguration
    /// What it says of itself as it decides (log lines, counts, gauges, hop-trace notes), for its
    /// interpreter to take (``takeObservations()``).
    var observations = Observations()
    /// Room, admission, ordering and the pending group.
    private(set) var intake: SubmissionIntake
    /// What the coordinator knows of its nodes (``NodeOversight``, touched only by the methods
    /// about nodes).
    var oversight: NodeOversight
    /// Whether a group is being made durable.
    private(set) var isCommitting = false
    /// The end of what this coordinator has handed its log, the group being made durable
    /// included: replicated, the standbys are sent a group while the leader syncs it, so a FETCH
    /// is answered up to here (the commit still waits for the leader's sync too).
    private(set) var offeredHead: UInt64
    /// Set when a sync failed after its group went to the standbys: this coordinator must not
    /// order again (``failed(_:error:now:)``).
    private(set) var hasSteppedDown = false
    /// The oldest seq the log still holds.
    private(set) var firstSeq: UInt64
    private var refusals = RefusalLog(wall: "coordinator")
    /// What is published, and under which topics.
    private var publication = Publication()
    /// The in-sync coordinators and the commit point, when this coordinator leads others
    /// (`CoordinatorMachine+Replication.swift`).
    var replication: ReplicationProgress?
    /// Groups the local log holds, oldest first, waiting for the commit point to reach them.
    private var uncommitted: Deque<PendingCommit> = []
    /// When this coordinator began leading (µs).
    let leaderSince: UInt64
    /// The in-sync standbys last reported as blocking commits (an alarm when it changes).
    var blockingReported: [String] = []

    init(
        configuration: CoordinatorConfiguration,
        registry: FlowRegistry,
        sequencer: Sequencer,
        firstSeq: UInt64,
        now: UInt64,
        replication: ReplicationProgress? = nil,
        fences: [String: UInt64] = [:]
    ) {
        self.replication = replication
        self.leaderSince = now
        self.configuration = configuration
        self.intake = SubmissionIntake(
            sequencer: sequencer,
            admission: Admission(registry: registry, limits: configuration.limits),
            maxPendingEntries: configuration.maxPendingEntries,
            fences: fences
        )
        self.oversight = NodeOversight(configuration: configuration, head: sequencer.durableHead, now: now)
        self.offeredHead = sequencer.durableHead
        self.firstSeq = firstSeq
    }

    /// What the machine observed since the last call, for the interpreter to log, count and trace.
    mutating func takeObservations() -> [Observation] { observations.take() }

    var epoch: UInt32 { intake.epoch }
    /// The end of the local log.
    var durableHead: UInt64 { intake.durableHead }
    /// What may be told: every entry up to here is acknowledged, published and served.
    var committedHead: UInt64 { replication?.committed ?? intake.durableHead }

    // MARK: The submit socket

    /// A batch read from the submit socket: SUBMITs, HELLOs and NODE_REPORTs.
    ///
    /// - Parameter received: When the batch was read, for the hop trace.
    mutating func receive(_ messages: [Message], now: UInt64, received: UInt64 = 0) -> [Action] {
        var actions: [Action] = []
        var answers = SubmissionIntake.Answers()
        for message in messages {
            guard let (peer, body) = RouterEnvelope.split(message) else { continue }
            do {
                guard let first = body.first else {
                    throw ProtocolError(.wrongFrameCount, "a message needs at least a header frame")
                }
                switch try WireHeader.read(first, expecting: .submit, .hello, .nodeReport).0 {
                case .submit:
                    let message = try SubmitMessage(frames: body)
                    do {
                        try checkSpeaker(peer, for: message.origin, session: message.session, in: "SUBMIT")
                    } catch let refusal as ProtocolError {
                        refuse(message, from: peer, refusal, now: now, answers: &answers)
                        continue
                    }
                    take(message, from: peer, now: now, received: received, answers: &answers)
                case .hello:
                    actions += hello(try HelloMessage(frames: body), from: peer, now: now)
                default:
                    // Decoded off the ordering path; whose it is, the header tells now.
                    try checkSpeaker(peer, for: try NodeReportMessage.node(in: first), in: "NODE_REPORT")
                    actions.append(.decodeReport(body, from: peer))
                }
            } catch {
                actions.append(reject(error, from: peer, now: now))
            }
        }
        for (peer, epoch, acks) in answers.immediate.byPeer {
            actions.append(.reply(ackFrames(acks, epoch: epoch), to: peer))
        }
        observations.count(\.duplicates, answers.duplicates)
        if let commit = nextCommit() { actions.append(commit) }
        return actions
    }

    /// Whether `message` (as the submit socket reads it) is a SUBMIT.
    static func isSubmit(_ message: Message) -> Bool {
        guard let (_, body) = RouterEnvelope.split(message), let first = body.first else { return false }
        return (try? WireHeader.read(first, expecting: .submit).0) == .submit
    }

    /// Takes in one SUBMIT; notes the refusals and traces the sampled entries it ordered.
    private mutating func take(
        _ message: SubmitMessage, from peer: RouterEnvelope, now: UInt64, received: UInt64, answers: inout SubmissionIntake.Answers
    ) {
        let orderedBefore = intake.pending.entries.count
        let refusedBefore = answers.refusals.count
        intake.take(
            message, from: peer, committed: committedHead, acknowledgeOrdered: acknowledgesOrdered(message),
            agreement: oversight.versionAgreement, now: now, answers: &answers
        )
        for refusal in answers.refusals[refusedBefore...] {
            if refusal.code == .staleOwner { oversight.takeovers.staleRefused += 1 }
            observations.refused(refusal.code)
            refusals.note(refusal, now: now, into: &observations)
        }
        if let trace = configuration.trace {
            for entry in intake.pending.entries[orderedBefore...] where trace.samples(entry.seq) {
                observations.hop(entry.seq, .coordinatorReceived, at: received)
                observations.hop(entry.seq, .coordinatorOrdered, at: now)
            }
        }
    }

    /// Refuses every submission of `message` for `refusal` (its connection may not speak for its
    /// origin): answered in the ACK, counted and noted like the intake's refusals.
    private mutating func refuse(_ message: SubmitMessage, from peer: RouterEnvelope, _ refusal: ProtocolError, now: UInt64, answers: inout SubmissionIntake.Answers) {
        for submission in message.submissions {
            answers.refusals.append(refusal)
            answers.immediate.add(.init(submission: submission.submission, seq: 0, status: .refused, reason: refusal.code), to: peer, epoch: intake.epoch)
        }
        observations.refused(refusal.code, message.submissions.count)
        refusals.note(refusal, now: now, into: &observations)
    }

    /// The ERROR for a message that broke a rule; counted and noted.
    mutating func reject(_ error: any Error, from peer: RouterEnvelope, now: UInt64) -> Action {
        let protocolError = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
        observations.rejected(protocolError.code)
        refusals.note(protocolError, now: now, into: &observations)
        return .reply(ErrorReply(request: 0, error: protocolError).frames, to: peer)
    }

    func ackFrames(_ acks: [AckMessage.Ack], epoch: UInt32) -> [[UInt8]] {
        AckMessage(epoch: epoch, head: committedHead, acks: acks).frames
    }

    // MARK: Group commit

    /// Orders a takeover for each move of `from`'s effects (after whatever waits for the log).
    ///
    /// - Returns: The seq of the last.
    mutating func orderTakeovers(_ moves: [TakeoverPlanner.Move], from: EffectOwner, now: UInt64) -> UInt64 {
        var last: UInt64 = 0
        for move in moves {
            last = intake.orderTakeover(Takeover(from: from, to: move.to), of: move.address, now: now).seq
        }
        return last
    }

    /// The next group to make durable, unless one is being made durable or nothing waits.
    mutating func nextCommit() -> Action? {
        guard !isCommitting, !hasSteppedDown, let group = intake.takeGroup() else { return nil }
        isCommitting = true
        offeredHead = max(offeredHead, group.lastSeq ?? 0)
        return .commit(group)
    }

    /// The log holds `group` durably: acknowledge it, publish it, and start the next group.
    /// Replicated, it waits for the in-sync coordinators first.
    mutating func committed(_ group: PendingCommit, now: UInt64) -> [Action] {
        isCommitting = false
        if intake.committed(group) { observations.log(.notice, "the log takes writes again") }
        var actions: [Action] = []
        if replication != nil {
            _ = replication!.wrote(upTo: intake.durableHead)
            uncommitted.append(group)
            actions += releaseCommitted()
        } else {
            actions += tell(group)
        }
        if let commit = nextCommit() { actions.append(commit) }
        return actions
    }

    /// Acknowledges, publishes and replicates a committed group.
    private mutating func tell(_ group: PendingCommit) -> [Action] {
        var actions: [Action] = []
        for (peer, epoch, acks) in group.acks.byPeer {
            actions.append(.reply(ackFrames(acks, epoch: epoch), to: peer))
        }
        for message in publication.entries(of: group, epoch: intake.epoch) {
            actions.append(.publish(message.frames, entries: message.entries))
        }
        observations.count(\.ordered, group.entries.count)
        if !group.entries.isEmpty { actions.append(.replicate(group.entries)) }
        return actions
    }

    /// Tells every waiting group the commit point has reached.
    mutating func releaseCommitted() -> [Action] {
        var actions: [Action] = []
        while let group = uncommitted.first, group.visibleAt <= committedHead {
            uncommitted.removeFirst()
            actions += tell(group)
        }
        return actions
    }

    /// The log refused `group`: nothing of it, nor of what was ordered after it, happened.
    ///
    /// Unless the standbys may hold it: a replicated leader sends a group while it syncs it, and
    /// when its own sync fails (``LeaderSyncFailed``) a standby may have the group in its log, so
    /// its seqs must never be given to other entries. The leader steps down instead (the process
    /// exits, as etcd does when its log cannot sync); whoever leads next decides the group's fate
    /// from its own log, and the submitters' retries are answered from there.
    mutating func failed(_ group: PendingCommit, error: any Error, now: UInt64) -> [Action] {
        isCommitting = false
        if let failure = error as? LeaderSyncFailed {
            hasSteppedDown = true
            let reason = "the log could not sync seqs \(group.entries.first?.seq ?? 0)…\(group.lastSeq ?? 0), which its standbys may hold: \(failure.cause)"
            observations.log(.critical, "stepping down: \(reason)")
            return [.stepDown(reason)]
        }
        let failure = intake.failed(group, error: error, now: now)
        offeredHead = intake.durableHead
        var actions: [Action] = []
        if failure.isFirst {
            observations.log(.error, 
                "the log refused a commit; refusing submissions until it takes writes again",
                ["flowkit.error": "\(error)"]
            )
            actions.append(publish(Alarm(kind: .logUnavailable, message: "\(error)")))
        }
        for (peer, epoch, acks) in failure.refused.byPeer {
            actions.append(.reply(ackFrames(acks, epoch: epoch), to: peer))
        }
        observations.refused(.internalError, Int(failure.rolledBack))
        return actions
    }

    /// The log dropped its entries before `firstSeq` (a snapshot covers them).
    mutating func noteCompacted(firstSeq: UInt64) {
        self.firstSeq = firstSeq
    }

    // MARK: The publish socket

    /// Subscription messages from the XPUB socket (``Publication/noteSubscriptions(_:)``).
    mutating func noteSubscriptions(_ messages: [Message]) {
        publication.noteSubscriptions(messages)
    }

    func heartbeat(now: UInt64) -> Action {
        .publish(HeartbeatMessage(epoch: intake.epoch, head: committedHead, time: now).frames, entries: 0)
    }

    func publish(_ alarm: Alarm) -> Action {
        .publish(AlarmMessage(alarm: alarm).frames, entries: 0)
    }
}
