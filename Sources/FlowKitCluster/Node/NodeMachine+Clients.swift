import Logging
import ZeroMQ

extension NodeMachine {
    // MARK: Clients

    /// Requests from the client socket. Bad ones get an `ERROR` and are never submitted.
    mutating func receiveFromClients(_ messages: [Message], now: UInt64) -> [Action] {
        var actions: [Action] = []
        for message in messages {
            guard let (peer, body) = RouterEnvelope.split(message) else { continue }
            do {
                actions += try handle(try ClientRequest(frames: body), from: peer, now: now)
            } catch {
                let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
                observations.rejected(protocolError.code)
                refusals.note(protocolError, now: now, into: &observations)
                actions.append(.reply(.error(request: Self.requestID(in: body), protocolError), to: peer))
            }
        }
        return actions + flush(now: now)
    }

    /// The request id of a message too broken to decode, when it has a valid header and gets that
    /// far; otherwise 0, as the protocol says (the id of a garbage frame is garbage). A request of
    /// a newer protocol version has its id there too (every version keeps it first), so the
    /// refusal of its version reaches the request that waits for it.
    static func requestID(in body: [[UInt8]]) -> UInt64 {
        guard let first = body.first, first.count >= WireHeader.size + 8,
            first[0] == WireHeader.magic.0, first[1] == WireHeader.magic.1, first[2] >= WireHeader.oldest
        else { return 0 }
        return first[WireHeader.size..<WireHeader.size + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private mutating func handle(_ request: ClientRequest, from peer: RouterEnvelope, now: UInt64) throws -> [Action] {
        switch request {
        case .emit(let id, let wait, _, _, _), .cancel(let id, let wait, _, _):
            guard let admitted = try admission.admit(request) else { return [] }
            guard !submissions.isFull else {
                throw ProtocolError(.overloaded, "\(submissions.count) submissions are waiting for the coordinator; retry shortly")
            }
            let deadline = now + UInt64(configuration.emitTimeout.microseconds)
            queue(admitted, waiter: .client(peer: peer, request: id, wait: wait, deadline: deadline), now: now)
            return []

        case .query(let id, let minApplied, let address):
            let parsed = try Address(parsing: address)
            _ = try admission.registry.flow(for: parsed)
            guard minApplied > follower.applied else { return [.answerQuery(request: id, address: parsed.description, to: peer)] }
            waiters.waitForQuery(min: minApplied, address: parsed.description, peer: peer, request: id, now: now)
            return []

        case .status(let id):
            return [.answerStatus(request: id, to: peer)]

        case .watch(let id, let seconds):
            return waiters.watch(peer: peer, request: id, seconds: seconds, applied: follower.applied, now: now).map(Self.action)
        }
    }

    private mutating func queue(_ admitted: Admission.Admitted, waiter: SubmissionQueue.Waiter, term: UInt64 = 0, now: UInt64) {
        _ = submissions.add(
            kind: admitted.kind, codec: admitted.codec, version: admitted.version, term: term, address: admitted.address, payload: admitted.payload, waiter: waiter,
            now: now
        )
    }

    /// An event or cancel sent by an effect running here. It passes the same rule as a client's:
    /// one the coordinator would refuse (an event over the size limit) is dropped here, and said so.
    mutating func submitFromEffect(
        address: Address, kind: EntryKind, codec: PayloadCodec, payload: [UInt8], term: UInt64, now: UInt64
    ) -> [Action] {
        do {
            let admitted = try admission.admit(kind: kind, codec: codec, address: address.description, payload: payload)
            queue(admitted, waiter: .effect, term: term, now: now)
        } catch {
            let refusal = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
            observations.refused(refusal.code)
            observations.log(.error, 
                "an effect's submission was refused and dropped",
                ["flowkit.address": "\(address)", "flowkit.error": "\(refusal)"]
            )
        }
        return flush(now: now)
    }

    /// Whether submissions wait: while the node joins through a snapshot (or may, before its first
    /// WELCOME), an entry it submitted could be ordered before the snapshot's seq and reach the
    /// node inside the snapshot, never applied as an entry, so its effects would run nowhere.
    var holdsSubmissions: Bool {
        follower.isJoining || (!link.hasBeenWelcomed && link.joinsThroughSnapshot && follower.applied == 0)
    }

    /// What is due, in SUBMIT messages; nothing while ``holdsSubmissions``.
    mutating func flush(now: UInt64) -> [Action] {
        guard !holdsSubmissions else { return [] }
        var actions: [Action] = []
        while true {
            let due = submissions.due(now: now, retryAfter: UInt64(configuration.retryInterval.microseconds))
            guard !due.isEmpty else { return actions }
            // A full queue drops the message; the submissions go again after the retry interval.
            actions.append(.submit(SubmitMessage(origin: configuration.id, session: session, submissions: due).frames))
            choice.submitted(now: now)
        }
    }

    // MARK: The coordinator's answers

    /// Messages from a coordinator on its submit socket: acks, welcome, errors.
    ///
    /// - Parameter index: Which coordinator's socket (in ``CoordinatorChoice/coordinators``); `nil`
    ///   for the current one.
    mutating func receiveFromCoordinator(_ messages: [Message], from index: Int? = nil, now: UInt64) -> [Action] {
        let index = index ?? choice.currentIndex
        var actions: [Action] = []
        for message in messages {
            let parts = message.parts
            do {
                guard let first = parts.first else { throw ProtocolError(.wrongFrameCount, "empty message") }
                switch try WireHeader.read(first, expecting: .ack, .welcome, .notLeader, .error).0 {
                case .ack:
                    choice.answered()
                    actions += handle(try AckMessage(frames: parts), now: now)
                case .notLeader:
                    if let leader = choice.redirected(try NotLeaderMessage(frames: parts), by: index, now: now) {
                        actions += switchCoordinator(to: leader, now: now)
                    }
                case .welcome:
                    let welcome = try WelcomeMessage(frames: parts)
                    if index != choice.currentIndex {
                        // Another coordinator's WELCOME, to a greeting sent to every one: it leads,
                        // unless it is from an older term than the one the node knows.
                        guard welcome.epoch >= link.epoch, let leader = choice.welcomed(by: index) else { continue }
                        actions += switchCoordinator(to: leader, now: now)
                    }
                    choice.answered()
                    let linkActions = link.welcome(
                        epoch: welcome.epoch, head: welcome.head, applied: follower.applied, isJoining: follower.isJoining, now: now
                    )
                    actions += adopt(linkActions, now: now)
                default:
                    let error = try ErrorReply(frames: parts)
                    if let older = error.olderProtocol(than: coordinatorProtocols[index]) {
                        speak(older, to: index)
                        if index == choice.currentIndex { actions += helloOnRequest(now: now, force: true) }
                    } else if error.error.code == .helloFirst {
                        actions += helloOnRequest(now: now)
                    } else {
                        observations.log(.error, "the coordinator refused a message", ["flowkit.error": "\(error.error)"])
                    }
                }
            } catch {
                observations.rejected((error as? ProtocolError)?.code ?? .malformed)
            }
        }
        return actions
    }

    private mutating func handle(_ ack: AckMessage, now: UInt64) -> [Action] {
        // A new term is handled before the answers (see CoordinatorLink.ack).
        let duplicatesOnly = !ack.acks.contains { $0.status != .duplicate }
        var actions = adopt(link.ack(epoch: ack.epoch, head: ack.head, duplicatesOnly: duplicatesOnly, applied: follower.applied), now: now)
        let askedForHello = ack.acks.contains { $0.status == .refused && $0.reason == .helloFirst }
        for outcome in submissions.receive(ack) {
            switch outcome {
            case .ordered(let pending, let seq):
                actions += answer(pending, seq: seq, epoch: ack.epoch)
                traceAnswer(pending, seq: seq, learntAt: now, now: now)
            case .refused(let pending, let refusal):
                switch pending.waiter {
                case .client(let peer, let request, _, _):
                    actions.append(.reply(.error(request: request, refusal), to: peer))
                case .effect where refusal.code == .staleOwner:
                    observations.count(\.staleSubmissions, 1)
                    observations.log(.warning,
                        "an effect's submission was refused: the instance's effects were taken over by another node while this one was down or cut off; dropped",
                        ["flowkit.address": "\(pending.submission.address)", "flowkit.term": "\(pending.submission.term)"]
                    )
                case .effect:
                    observations.log(.error, 
                        "the coordinator refused an effect's submission; it is dropped",
                        ["flowkit.address": "\(pending.submission.address)", "flowkit.error": "\(refusal)"]
                    )
                }
            }
        }
        if askedForHello { actions += helloOnRequest(now: now) }
        return actions
    }

    /// The coordinator does not know this connection (it restarted, or the connection was made
    /// again): say HELLO on it and send every unacknowledged submission again, at most every
    /// 100 ms; the HELLO goes first on the same connection, so the coordinator knows it by then.
    private mutating func helloOnRequest(now: UInt64, force: Bool = false) -> [Action] {
        guard force || now >= lastHelloOnRequest + 100_000 || lastHelloOnRequest == 0 else { return [] }
        lastHelloOnRequest = now
        observations.log(.notice, "the coordinator asked this node to say HELLO again (it restarted, or the connection was made again); resending")
        choice.greeted(now: now)
        submissions.resendAll()
        return [hello] + flush(now: now)
    }

    /// Traces a sampled submission of this node's, once it knows its seq (from its ACK or ENTRIES).
    mutating func traceAnswer(_ pending: SubmissionQueue.Pending, seq: UInt64, learntAt: UInt64, now: UInt64) {
        guard let trace = configuration.trace, seq != 0, trace.samples(seq) else { return }
        observations.hop(seq, .nodeReceived, at: pending.submission.submittedAt)
        observations.hop(seq, .nodeSubmitted, at: pending.firstSent)
        observations.hop(seq, .nodeAcknowledged, at: learntAt)
        observations.hop(seq, .nodeAnswered, at: now)
    }

    // MARK: Ticks

    /// Retries, repairs, timeouts, the report; run every tick.
    mutating func tick(now: UInt64) -> [Action] {
        var actions = flush(now: now)
        actions += adopt(follower.tick(now: now), now: now)
        for (peer, request, error) in submissions.expireWaiters(now: now, timeout: configuration.emitTimeout) {
            actions.append(.reply(.error(request: request, error), to: peer))
        }
        actions += waiters.tick(applied: follower.applied, now: now).map(Self.action)
        noteProgress(now: now)
        if now - lastReport >= UInt64(configuration.reportInterval.microseconds) {
            lastReport = now
            actions.append(.report)
        }
        actions += adopt(link.tick(now: now), now: now)
        switch choice.tick(now: now) {
        case .probe:
            choice.greeted(now: now)
            actions.append(hello)
        case .switchTo(let next):
            actions += switchCoordinator(to: next, now: now)
        case nil:
            break
        }
        return actions
    }

    /// Logs, once, a node that has applied nothing for the stall timeout while behind the head:
    /// an entry it cannot get, or cannot apply, would otherwise hold it back in silence.
    private mutating func noteProgress(now: UInt64) {
        if let unreadable = follower.unreadable, !unreadableLogged {
            unreadableLogged = true
            // Older than the steps reach: only another build helps, so the node does not run on.
            if unreadable.version < unreadable.readsFrom ?? 1 {
                refusal = ProtocolError(.versionUnreadable, "this node's build cannot read the log, so it does not run: \(unreadable)")
            }
            observations.log(.critical, 
                "stopped applying: \(unreadable)",
                ["flowkit.seq": "\(unreadable.seq)", "flowkit.flow": "\(unreadable.flow)", "flowkit.version": "\(unreadable.version)"]
            )
        }
        let applied = follower.applied
        if applied != progress.applied || applied >= follower.knownHead {
            if progress.logged {
                observations.log(.notice, "applying again", ["flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)"])
            }
            progress = (applied, now, false)
        } else if !progress.logged, now - min(now, progress.at) >= UInt64(configuration.stallTimeout.microseconds) {
            progress.logged = true
            observations.log(.error, 
                "stalled: nothing applied for \(configuration.stallTimeout) while behind the head; waiting for seq \(applied + 1)",
                [
                    "flowkit.applied": "\(applied)", "flowkit.head": "\(follower.knownHead)",
                    "flowkit.waiting": "\(follower.waitingCount)", "flowkit.joining": "\(follower.isJoining)",
                ]
            )
        }
    }
}
