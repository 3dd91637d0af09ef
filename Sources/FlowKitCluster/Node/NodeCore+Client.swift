import FlowKit
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
    /// Requests from the client socket. Bad ones get an `ERROR` and are never submitted.
    func receiveFromClients(_ messages: [Message]) {
        for message in messages {
            guard let (peer, body) = RouterEnvelope.split(message) else { continue }
            let request = (try? ClientRequest(frames: body))?.request ?? Self.requestID(in: body)
            do {
                try handle(try ClientRequest(frames: body), from: peer)
            } catch {
                let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
                counters.count(rejected: protocolError.code)
                refusals.note(protocolError, now: WallClock.micros(), logger: logger)
                reply(.error(request: request, protocolError), to: peer)
            }
        }
        flushSubmissions()
    }

    /// The request id of a message too broken to decode, when it has a valid header and gets that
    /// far; otherwise 0, as the protocol says (the id of a garbage frame is garbage).
    private static func requestID(in body: [[UInt8]]) -> UInt64 {
        guard let first = body.first, first.count >= WireHeader.size + 8,
            first[0] == WireHeader.magic.0, first[1] == WireHeader.magic.1, first[2] == WireHeader.version
        else { return 0 }
        return first[WireHeader.size..<WireHeader.size + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func handle(_ request: ClientRequest, from peer: RouterEnvelope) throws {
        switch request {
        case .emit(let id, let wait, _, _, _), .cancel(let id, let wait, _, _):
            if let admitted = try admit(request) {
                try submit(admitted, waiter: .client(peer: peer, request: id, wait: wait, deadline: deadline(configuration.emitTimeout)))
            }

        case .query(let id, let minApplied, let address):
            let parsed = try Address(parsing: address)
            _ = try registryFlow(for: parsed)
            if minApplied > applied {
                waitForApplied(minApplied, peer: peer, request: id, address: parsed.description)
            } else {
                answerQuery(request: id, address: parsed.description, to: peer)
            }

        case .status(let id):
            reply(.status(request: id, json: JSONFrame.encode(status())), to: peer)

        case .watch(let id, let seconds):
            watch(peer: peer, request: id, seconds: seconds)
        }
    }

    func answerQuery(request: UInt64, address: String, to peer: RouterEnvelope) {
        do {
            let parsed = try Address(parsing: address)
            guard let replica = replicas.replica(at: parsed) else {
                throw ProtocolError(
                    .notFound,
                    "\(address) has no state yet on \(configuration.name): an instance is created by its first event"
                )
            }
            reply(
                .state(
                    request: request,
                    applied: applied,
                    lastSeq: replica.lastSeq,
                    digest: try replica.digest().bytes,
                    state: try replica.stateJSON()
                ),
                to: peer
            )
        } catch {
            reply(.error(request: request, error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")), to: peer)
        }
    }

    func status() -> NodeStatus {
        NodeStatus(
            id: configuration.id,
            name: configuration.name,
            session: session,
            clientEndpoint: sockets.clientEndpoint,
            epoch: epoch,
            applied: applied,
            knownHead: knownHead,
            connected: isConnected,
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            pendingSubmissions: pendingSubmissionCount,
            waitingBehindGap: waitingBehindGap,
            // Exact once caught up, the moment digests are compared. While the node catches up, the
            // digest stays within its hashing budget instead, so that someone polling the status
            // of a replaying node does not slow the replay down (it cost a third of it).
            digest: replicas.combinedDigest(exact: applied >= knownHead).description,
            flows: registryNames,
            rejected: counters.rejections,
            entriesSkipped: replicas.skippedEntries,
            coordinator: configuration.coordinator
        )
    }

    private func deadline(_ timeout: Duration) -> UInt64 {
        WallClock.micros() + UInt64(timeout.microseconds)
    }
}
