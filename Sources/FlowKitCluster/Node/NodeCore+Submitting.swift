import CoreMetrics
import FlowKit
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
    // MARK: Submitting

    func sendHello() {
        let hello = HelloMessage(
            node: configuration.id,
            session: session,
            info: NodeInfo(
                name: configuration.name,
                clientEndpoint: configuration.advertisedEndpoint ?? sockets.clientEndpoint,
                flows: registry.names,
                pid: ProcessInfo.processInfo.processIdentifier
            )
        )
        _ = try? sockets.submit.trySend(Message(parts: hello.frames))
    }

    /// An event or cancel sent by an effect running here. It passes the same rule as a client's:
    /// one the coordinator would refuse (an event over the size limit) is dropped here, and said so.
    func submitFromEffect(address: Address, kind: EntryKind, codec: PayloadCodec, payload: [UInt8]) {
        do {
            let admitted = try admit(kind: kind, codec: codec, address: address.description, payload: payload)
            _ = submissions.add(
                kind: admitted.kind, codec: admitted.codec, address: admitted.address, payload: admitted.payload,
                waiter: .effect, now: WallClock.micros()
            )
        } catch {
            let refusal = error as? ProtocolError ?? ProtocolError(.malformed, "\(error)")
            counters.count(refused: refusal.code)
            logger.error(
                "an effect's submission was refused and dropped",
                metadata: ["flowkit.address": "\(address)", "flowkit.error": "\(refusal)"]
            )
        }
        flushSubmissions()
    }

    /// Applies the admission rule to what an effect submits.
    func admit(kind: EntryKind, codec: PayloadCodec, address: String, payload: [UInt8]) throws -> Admission.Admitted {
        try admission.admit(kind: kind, codec: codec, address: address, payload: payload)
    }

    /// Applies the admission rule to a client's emit or cancel.
    func admit(_ request: ClientRequest) throws -> Admission.Admitted? {
        try admission.admit(request)
    }

    /// Queues a client's admitted emit or cancel.
    func submit(_ admitted: Admission.Admitted, waiter: SubmissionQueue.Waiter) throws {
        guard !submissions.isFull else {
            throw ProtocolError(.overloaded, "\(submissions.count) submissions are waiting for the coordinator; retry shortly")
        }
        _ = submissions.add(
            kind: admitted.kind, codec: admitted.codec, address: admitted.address, payload: admitted.payload,
            waiter: waiter, now: WallClock.micros()
        )
    }

    /// Sends what is due, in one SUBMIT message.
    func flushSubmissions() {
        let now = WallClock.micros()
        while true {
            let due = submissions.due(now: now, retryAfter: UInt64(configuration.retryInterval.microseconds))
            guard !due.isEmpty else { return }
            let message = SubmitMessage(origin: configuration.id, session: session, submissions: due)
            // A full queue drops the message; the submissions go again after the retry interval.
            _ = try? sockets.submit.trySend(Message(parts: message.frames))
        }
    }

    /// Messages from the coordinator on the submit socket: acks, welcome, errors.
    func receiveFromCoordinator(_ messages: [Message]) {
        for message in messages {
            let parts = message.parts
            do {
                guard let first = parts.first else { throw ProtocolError(.wrongFrameCount, "empty message") }
                let (type, _) = try WireHeader.read(first, expecting: .ack, .welcome, .error)
                switch type {
                case .ack:
                    handle(try AckMessage(frames: parts))
                case .welcome:
                    let welcome = try WelcomeMessage(frames: parts)
                    perform(
                        link.welcome(
                            epoch: welcome.epoch, head: welcome.head, applied: follower.applied, isJoining: follower.isJoining,
                            now: WallClock.micros()
                        )
                    )
                default:
                    let error = try ErrorReply(frames: parts)
                    logger.error("the coordinator refused a message", metadata: ["flowkit.error": "\(error.error)"])
                }
            } catch {
                counters.count(rejected: (error as? ProtocolError)?.code ?? .malformed)
            }
        }
    }

    func handle(_ ack: AckMessage) {
        let acknowledgedAt = configuration.trace == nil ? 0 : WallClock.micros()
        // A new term is handled before the answers (see CoordinatorLink.ack).
        let duplicatesOnly = !ack.acks.contains { $0.status != .duplicate }
        perform(link.ack(epoch: ack.epoch, head: ack.head, duplicatesOnly: duplicatesOnly, applied: follower.applied))
        for outcome in submissions.receive(ack) {
            switch outcome {
            case .ordered(let pending, let seq):
                answer(pending, seq: seq, epoch: ack.epoch)
                traceAnswer(pending, seq: seq, learntAt: acknowledgedAt)
            case .refused(let pending, let refusal):
                switch pending.waiter {
                case .client(let peer, let request, _, _):
                    reply(.error(request: request, refusal), to: peer)
                case .effect:
                    logger.error(
                        "the coordinator refused an effect's submission; it is dropped",
                        metadata: ["flowkit.address": "\(pending.submission.address)", "flowkit.error": "\(refusal)"]
                    )
                }
            }
        }
    }

    /// Traces a sampled submission of this node's, once it knows its seq (from its ACK or ENTRIES).
    func traceAnswer(_ pending: SubmissionQueue.Pending, seq: UInt64, learntAt: UInt64) {
        guard let trace = configuration.trace, seq != 0, trace.samples(seq) else { return }
        trace.note(seq, .nodeReceived, at: pending.submission.submittedAt)
        trace.note(seq, .nodeSubmitted, at: pending.firstSent)
        trace.note(seq, .nodeAcknowledged, at: learntAt)
        trace.note(seq, .nodeAnswered, at: WallClock.micros())
    }

    /// Answers the client waiting on an ordered submission, now or once applied.
    func answer(_ pending: SubmissionQueue.Pending, seq: UInt64, epoch: UInt32) {
        guard case .client(let peer, let request, let wait, _) = pending.waiter else { return }
        perform(waiters.ordered(seq: seq, epoch: epoch, wait: wait, peer: peer, request: request, applied: follower.applied))
    }
}
