import FlowKitCore
import Foundation
import Logging
import ZeroMQ

extension NodeCore {
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
            epoch: machine.epoch,
            applied: applied,
            knownHead: machine.follower.knownHead,
            connected: isConnected,
            instances: replicas.count,
            runningEffects: replicas.runningEffects,
            pendingSubmissions: machine.pendingSubmissions,
            waitingBehindGap: machine.follower.waitingCount,
            // Exact once caught up, the moment digests are compared. While the node catches up, the
            // digest stays within its hashing budget instead, so that someone polling the status
            // of a replaying node does not slow the replay down (it cost a third of it).
            digest: replicas.combinedDigest(exact: applied >= machine.follower.knownHead).description,
            flows: registry.names,
            rejected: counters.rejections,
            entriesSkipped: replicas.skippedEntries,
            coordinator: machine.choice.current
        )
    }
}
