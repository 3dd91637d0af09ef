/// The coordinator's intake, a state machine without I/O: what happens to each submission between
/// the submit socket and the log.
///
/// Every submission passes the same checks, in this order: the coordinator has room (the log takes
/// writes, and not too much waits for it), the ``Admission`` rule, then the ``Sequencer``, which
/// orders it or finds it a duplicate. What is ordered waits in the pending group until the executor
/// takes it (``takeGroup()``), makes it durable and reports the outcome (``committed(_:)`` or
/// ``failed(_:error:now:)``); only then are its acknowledgements sent. A log that refuses a write
/// closes the intake for ``logRetryInterval``: submissions are refused with the log's error until
/// the next one tries the log again.
///
/// Times are microseconds since the Unix epoch, passed in, so tests drive the intake without a clock.
struct SubmissionIntake {
    /// What one SUBMIT message came to, apart from what joined the pending group.
    struct Answers {
        /// Acknowledgements to send now: refusals, and duplicates of entries already durable.
        var immediate = PendingAcks()
        /// Why each refused submission was refused, in order.
        var refusals: [ProtocolError] = []
        var duplicates = 0
    }

    /// What a refused commit came to.
    struct Failure {
        /// Every submission of the failed group and of those ordered after it, refused.
        var refused: PendingAcks
        /// How many ordered entries never happened.
        var rolledBack: UInt64
        /// What the submitters are told, and what the intake refuses with until it retries the log.
        var reason: ProtocolError
        /// Whether the intake was open until now (the first failure of a run of them).
        var isFirst: Bool
    }

    private(set) var sequencer: Sequencer
    private var admission: Admission
    /// Ordered, waiting to be made durable: the next group commit.
    private(set) var pending = PendingCommit()
    /// Set while the log refuses writes: submissions are refused until `retryAt`.
    private(set) var logFailure: (error: ProtocolError, retryAt: UInt64)?
    /// The most ordered entries that may wait for the log before submissions are refused.
    let maxPendingEntries: Int
    /// How long submissions are refused after the log refused a commit.
    let logRetryInterval: UInt64
    /// Each taken-over instance's last takeover seq (its *fence*): an effect's submission under an
    /// older ownership term is refused (``ProtocolError/Code/staleOwner``).
    private(set) var fences: [String: UInt64] = [:]
    /// Fences set by takeovers the log does not hold yet, oldest first, with the fence each
    /// replaced: undone if the log refuses them.
    private var uncommittedFences: [(address: String, seq: UInt64, previous: UInt64?)] = []

    init(
        sequencer: Sequencer, admission: Admission, maxPendingEntries: Int, logRetryInterval: UInt64 = 500_000, fences: [String: UInt64] = [:]
    ) {
        self.sequencer = sequencer
        self.admission = admission
        self.maxPendingEntries = maxPendingEntries
        self.logRetryInterval = logRetryInterval
        self.fences = fences
    }

    var epoch: UInt32 { sequencer.epoch }
    var durableHead: UInt64 { sequencer.durableHead }

    /// Takes in the submissions of one SUBMIT message.
    ///
    /// Ordered submissions join the pending group with their acknowledgements; the rest are
    /// answered in `answers`.
    ///
    /// - Parameters:
    ///   - committed: The commit point: a duplicate of an entry past it is acknowledged with the
    ///     pending group, once that is committed, not at once. With one coordinator it is the
    ///     durable head; replicated, the point every in-sync coordinator holds.
    ///   - acknowledgeOrdered: Whether the submitter hears of its ordered submissions in an ACK;
    ///     `false` for a node that learns of them from their entries. Duplicates and refusals are
    ///     always acknowledged.
    ///   - agreement: The version of each flow the live nodes agree on: a newer event is refused.
    mutating func take(
        _ message: SubmitMessage,
        from peer: RouterEnvelope,
        committed: UInt64 = .max,
        acknowledgeOrdered: Bool = true,
        agreement: VersionAgreement = VersionAgreement(),
        now: UInt64,
        answers: inout Answers
    ) {
        let epoch = sequencer.epoch
        for submission in message.submissions {
            let admitted: Admission.Admitted
            do {
                try checkRoom(now: now)
                admitted = try admission.admit(submission, agreement: agreement, now: now)
                try checkFence(submission)
            } catch {
                let refusal = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
                answers.refusals.append(refusal)
                answers.immediate.add(.init(submission: submission.submission, seq: 0, status: .refused, reason: refusal.code), to: peer, epoch: epoch)
                continue
            }
            var ordered = submission
            ordered.codec = admitted.codec
            ordered.payload = admitted.payload
            switch sequencer.order(ordered, origin: message.origin, session: message.session, now: now) {
            case .ordered(let entry):
                pending.add(entry)
                let ack = AckMessage.Ack(submission: submission.submission, seq: entry.seq, status: .ordered)
                if acknowledgeOrdered {
                    pending.acks.add(ack, to: peer, epoch: epoch)
                } else {
                    pending.unacknowledged.add(ack, to: peer, epoch: epoch)
                }
            case .duplicate(let seq, let orderedIn):
                answers.duplicates += 1
                let ack = AckMessage.Ack(submission: submission.submission, seq: seq ?? 0, status: .duplicate)
                if let seq, seq > min(committed, sequencer.durableHead) {
                    // Not committed yet: acknowledged with its group, under the term that ordered
                    // it (an older one's, for an entry a new leader found in its log).
                    pending.acks.add(ack, to: peer, epoch: orderedIn ?? epoch)
                } else {
                    // Acknowledged under the epoch that ordered it (0 when it is no longer known).
                    answers.immediate.add(ack, to: peer, epoch: orderedIn ?? 0)
                }
            }
        }
    }

    /// Refuses an effect's submission whose ownership term a takeover of its instance ended: the
    /// effect moved while its node was down, paused or cut off, and only the new owner's count.
    private func checkFence(_ submission: Submission) throws {
        guard submission.term > 0, let fence = fences[submission.address], submission.term < fence else { return }
        throw ProtocolError(
            .staleOwner,
            "\(submission.address)'s effects were taken over at seq \(fence); an effect started at seq \(submission.term) no longer owns them"
        )
    }

    /// Orders a takeover of `address`'s effects, after whatever waits: from here on, effects'
    /// submissions for it under older terms are refused.
    mutating func orderTakeover(_ takeover: Takeover, of address: String, now: UInt64) -> Entry {
        let entry = sequencer.orderTakeover(takeover, of: address, now: now)
        pending.add(entry)
        uncommittedFences.append((address, entry.seq, fences[address]))
        fences[address] = entry.seq
        return entry
    }

    /// Refuses everything while the log refuses writes, or while too much waits for it.
    private func checkRoom(now: UInt64) throws {
        if let logFailure, now < logFailure.retryAt { throw logFailure.error }
        if pending.entries.count >= maxPendingEntries {
            throw ProtocolError(.overloaded, "the coordinator has \(pending.entries.count) entries waiting for the log")
        }
    }

    /// The group to make durable now, if anything waits; the intake starts a new one.
    mutating func takeGroup() -> PendingCommit? {
        guard !pending.isEmpty else { return nil }
        defer { pending = PendingCommit() }
        return pending
    }

    /// The log holds `group` durably: its acknowledgements may go.
    ///
    /// - Returns: Whether the log takes writes again after refusing them.
    mutating func committed(_ group: PendingCommit) -> Bool {
        if let last = group.lastSeq { sequencer.committed(through: last) }
        uncommittedFences.removeAll { $0.seq <= sequencer.durableHead }
        defer { logFailure = nil }
        return logFailure != nil
    }

    /// The log refused `group`: nothing of it, nor of what was ordered after it, happened.
    mutating func failed(_ group: PendingCommit, error: any Error, now: UInt64) -> Failure {
        let later = takeGroup() ?? PendingCommit()
        let rolledBack = sequencer.rollBack()
        while let last = uncommittedFences.last, last.seq > sequencer.durableHead {
            uncommittedFences.removeLast()
            fences[last.address] = last.previous
        }
        let reason = ProtocolError(.internalError, "the coordinator's log refused the write (\(error)); retry later")
        let isFirst = logFailure == nil
        logFailure = (reason, now + logRetryInterval)
        var refused = PendingAcks()
        let owed = [group.acks, group.unacknowledged, later.acks, later.unacknowledged]
        for (peer, _, acks) in owed.flatMap(\.byPeer) {
            for ack in acks {
                refused.add(.init(submission: ack.submission, seq: 0, status: .refused, reason: .internalError), to: peer, epoch: sequencer.epoch)
            }
        }
        return Failure(refused: refused, rolledBack: rolledBack, reason: reason, isFirst: isFirst)
    }
}
