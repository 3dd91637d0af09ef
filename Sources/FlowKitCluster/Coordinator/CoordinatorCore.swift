import CoreMetrics
import FlowKit
import Logging
import ZeroMQ

/// The coordinator's serial heart: it orders submissions, groups them into commits, and once the
/// log holds a group durably, acknowledges it to its submitters and publishes it.
///
/// Durable before visible: nothing is acknowledged or published before the log has committed it.
/// Each batch read from the submit socket is ordered and committed at once, on the I/O loop's
/// thread; what arrives while a commit syncs waits in the socket and forms the next group. That is
/// the group commit, without a thread hop or a timer between a submission and its commit.
actor CoordinatorCore {
    let configuration: CoordinatorConfiguration
    let registry: FlowRegistry
    let logger: Logger
    let writer: LogWriter
    let submitSocket: AsyncSocket
    let publishSocket: AsyncSocket
    /// Capacity, admission, ordering and the pending group: everything between a submission and
    /// the log, without I/O.
    var intake: SubmissionIntake
    var firstSeq: UInt64
    var membership: Membership
    let replica: CoordinatorReplica
    let counters = ClusterCounters()
    var lastStatus: (time: UInt64, head: UInt64)
    /// Address prefixes someone subscribes to (from the XPUB socket's subscription messages): while
    /// there are any, runs of one instance are published under their address as well as batches.
    var addressSubscriptions: Set<[UInt8]> = []
    /// NODE_REPORTs read from the submit socket, for ``receiveReports()`` to decode.
    let reportIntake: AsyncStream<(RouterEnvelope, [[UInt8]])>.Continuation
    let reports: AsyncStream<(RouterEnvelope, [[UInt8]])>
    var refusals = RefusalLog(wall: "coordinator")
    /// Entries of the log found too large for any message (while recovering, or serving them).
    var quarantinedEntries = 0
    /// The alarm for them, published with the next status: subscribers connect after recovery.
    var unannouncedQuarantine: Alarm?
    /// Packs published entries: at most 4,096 entries or 1 MiB per message, a larger entry alone.
    let packer = RecordPacker(maxCount: 4_096, maxBytes: 1 << 20)

    init(
        configuration: CoordinatorConfiguration,
        registry: FlowRegistry,
        logger: Logger,
        writer: LogWriter,
        sequencer: Sequencer,
        firstSeq: UInt64,
        submitSocket: AsyncSocket,
        publishSocket: AsyncSocket,
        replica: CoordinatorReplica
    ) {
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        self.writer = writer
        self.intake = SubmissionIntake(
            sequencer: sequencer,
            admission: Admission(registry: registry, limits: configuration.limits),
            maxPendingEntries: configuration.maxPendingEntries
        )
        self.firstSeq = firstSeq
        self.submitSocket = submitSocket
        self.publishSocket = publishSocket
        self.replica = replica
        self.membership = Membership(
            timeout: UInt64(configuration.nodeTimeout.microseconds),
            stallTimeout: UInt64(configuration.stallTimeout.microseconds),
            forgetAfter: UInt64(configuration.forgetDownNodesAfter.microseconds)
        )
        // Bounded: a flood of reports (a fuzzer's) is dropped, not queued.
        (reports, reportIntake) = AsyncStream.makeStream(of: (RouterEnvelope, [[UInt8]]).self, bufferingPolicy: .bufferingNewest(1_024))
        lastStatus = (WallClock.micros(), sequencer.durableHead)
    }

    var epoch: UInt32 { intake.epoch }

    func noteCompacted(firstSeq: UInt64) {
        self.firstSeq = firstSeq
    }
    var durableHead: UInt64 { intake.durableHead }

    // MARK: Submissions

    /// Handles a batch of messages from the submit socket.
    func handleSubmitBatch(_ messages: [Message]) async {
        let received = configuration.trace == nil ? 0 : WallClock.micros()
        var answers = SubmissionIntake.Answers()
        for message in messages {
            guard let (peer, body) = RouterEnvelope.split(message) else { continue }
            do {
                guard let first = body.first else {
                    throw ProtocolError(.wrongFrameCount, "a message needs at least a header frame")
                }
                let (type, _) = try WireHeader.read(first, expecting: .submit, .hello, .nodeReport)
                switch type {
                case .submit:
                    take(try SubmitMessage(frames: body), from: peer, received: received, answers: &answers)
                case .hello:
                    let hello = try HelloMessage(frames: body)
                    let lost = membership.hello(node: hello.node, session: hello.session, info: hello.info, now: WallClock.micros())
                    if lost > 0 {
                        counters.effectsLost.add(lost)
                        let message = "\(hello.info.name) restarted: the \(lost) effect(s) its previous process was running were lost"
                        logger.warning("\(message)")
                        publish(Alarm(kind: .effectsLost, message: message))
                    }
                    logger.info(
                        "node said hello",
                        metadata: ["flowkit.node": "\(hello.info.name)", "flowkit.node.endpoint": "\(hello.info.clientEndpoint)"]
                    )
                    let welcome = WelcomeMessage(
                        epoch: intake.epoch,
                        head: intake.durableHead,
                        info: CoordinatorInfo(firstSeq: firstSeq, dedupWindow: configuration.dedupWindow)
                    )
                    _ = try? submitSocket.trySend(peer.reply(welcome.frames))
                default:
                    // Decoded elsewhere (``receiveReports()``): a report's JSON of a thousand
                    // digests took milliseconds, which the order behind it waited for.
                    if case .dropped(let (oldest, _)) = reportIntake.yield((peer, body)) {
                        reject(ProtocolError(.overloaded, "1,024 NODE_REPORTs wait to be read; the oldest was dropped"), from: oldest)
                    }
                }
            } catch {
                reject(error, from: peer)
            }
        }
        for (peer, epoch, acks) in answers.immediate.byPeer {
            sendAcks(acks, to: peer, epoch: epoch)
        }
        counters.duplicates.add(answers.duplicates)
        commitPending()
    }

    /// Takes in one SUBMIT; notes the refusals and traces the sampled entries it ordered.
    func take(_ message: SubmitMessage, from peer: RouterEnvelope, received: UInt64, answers: inout SubmissionIntake.Answers) {
        let now = WallClock.micros()
        let orderedBefore = intake.pending.entries.count
        let refusedBefore = answers.refusals.count
        intake.take(message, from: peer, now: now, answers: &answers)
        for refusal in answers.refusals[refusedBefore...] {
            counters.count(refused: refusal.code)
            refusals.note(refusal, now: now, logger: logger)
        }
        if let trace = configuration.trace {
            for entry in intake.pending.entries[orderedBefore...] where trace.samples(entry.seq) {
                trace.note(entry.seq, .coordinatorReceived, at: received)
                trace.note(entry.seq, .coordinatorOrdered, at: now)
            }
        }
    }

    /// Decodes NODE_REPORTs off the ordering path and takes in what they say, until cancelled.
    nonisolated func receiveReports() async {
        for await (peer, body) in reports {
            do {
                await note(try NodeReportMessage(frames: body))
            } catch {
                await reject(error, from: peer)
            }
        }
    }

    func note(_ report: NodeReportMessage) async {
        for divergence in membership.report(report, head: intake.durableHead, now: WallClock.micros()) {
            await raise(divergence)
        }
    }

    func reject(_ error: any Error, from peer: RouterEnvelope) {
        let protocolError = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
        counters.count(rejected: protocolError.code)
        refusals.note(protocolError, now: WallClock.micros(), logger: logger)
        _ = try? submitSocket.trySend(peer.reply(ErrorReply(request: 0, error: protocolError).frames))
    }

    func sendAcks(_ acks: [AckMessage.Ack], to peer: RouterEnvelope, epoch: UInt32) {
        let message = AckMessage(epoch: epoch, head: intake.durableHead, acks: acks)
        if (try? submitSocket.trySend(peer.reply(message.frames))) != true {
            // The node retries what it does not hear about; an ack lost here costs a duplicate.
            counters.acksDropped.add(1)
        }
    }

    // MARK: Group commit

    /// Makes what is pending durable now, on this thread, then acknowledges and publishes it.
    func commitPending() {
        guard let group = intake.takeGroup() else { return }
        let records = group.records
        do {
            let started = ContinuousClock.now
            let startedAt = configuration.trace == nil ? 0 : WallClock.micros()
            try writer.runHere { log in
                try log.append(records)
                try log.commit()
            }
            counters.recordCommit(entries: records.count, duration: ContinuousClock.now - started)
            if let trace = configuration.trace {
                let committedAt = WallClock.micros()
                for entry in group.entries where trace.samples(entry.seq) {
                    trace.note(entry.seq, .coordinatorCommitStarted, at: startedAt)
                    trace.note(entry.seq, .coordinatorCommitted, at: committedAt)
                }
            }
            committed(group)
        } catch {
            failed(group, error)
        }
    }

    func committed(_ group: PendingCommit) {
        if intake.committed(group) { logger.notice("the log takes writes again") }
        for (peer, epoch, acks) in group.acks.byPeer { sendAcks(acks, to: peer, epoch: epoch) }
        let acknowledgedAt = configuration.trace == nil ? 0 : WallClock.micros()
        for frame in packer.pack(group.records.lazy.map(\.record)) {
            publish(EntriesMessage.frames(address: EntriesMessage.batchTopic, epoch: intake.epoch, records: frame.frame), entries: frame.count)
        }
        if !addressSubscriptions.isEmpty {
            for run in entryRuns(group.entries, records: group.records, packer: packer) {
                publish(EntriesMessage.frames(address: run.address, epoch: intake.epoch, records: run.records), entries: run.count)
            }
        }
        if let trace = configuration.trace {
            let publishedAt = WallClock.micros()
            for entry in group.entries where trace.samples(entry.seq) {
                trace.note(entry.seq, .coordinatorAcknowledged, at: acknowledgedAt)
                trace.note(entry.seq, .coordinatorPublished, at: publishedAt)
            }
        }
        counters.ordered.add(group.entries.count)
        if !group.entries.isEmpty { replica.enqueue(group.entries) }
    }

    /// The log refused the group: nothing of it, nor of what was ordered after it, happened.
    func failed(_ group: PendingCommit, _ error: any Error) {
        let failure = intake.failed(group, error: error, now: WallClock.micros())
        if failure.isFirst {
            logger.error(
                "the log refused a commit; refusing submissions until it takes writes again",
                metadata: ["flowkit.error": "\(error)"]
            )
            publish(Alarm(kind: .logUnavailable, message: "\(error)"))
        }
        for (peer, epoch, acks) in failure.refused.byPeer { sendAcks(acks, to: peer, epoch: epoch) }
        counters.count(refused: .internalError, by: Int(failure.rolledBack))
    }
}
