import FlowKit
import Logging
import ZeroMQ

/// Serves the coordinator's sync socket: log ranges for gap repair, snapshots for late joiners.
///
/// Reads go through the log thread between commits, and snapshots come from the coordinator's
/// replica: neither stops the order.
struct SyncServer: Sendable {
    let socket: AsyncSocket
    let writer: LogWriter
    let core: CoordinatorCore
    let quarantine: EntryQuarantine
    let maxRangeCount: Int
    let logger: Logger
    /// The most state bytes in one snapshot chunk; a larger state is split (``SnapshotChunking``).
    let maxChunkBytes = 1 << 20
    let maxRangeBytes = 4 << 20

    func run() async {
        while let batch = try? await socket.receiveBatch(max: 64) {
            for message in batch {
                guard let (peer, body) = RouterEnvelope.split(message) else { continue }
                do {
                    switch try SyncRequest(frames: body) {
                    case .range(let request):
                        try await serveRange(request, to: peer)
                    case .snapshot(let request):
                        try await serveSnapshot(request, to: peer)
                    }
                } catch {
                    let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
                    if protocolError.code != .notFound { core.counters.count(rejected: protocolError.code) }
                    let request = (try? SyncRequest(frames: body))?.request ?? 0
                    try? await socket.send(peer.reply(ErrorReply(request: request, error: protocolError).frames))
                }
            }
        }
    }

    private func serveRange(_ request: RangeRequest, to peer: RouterEnvelope) async throws {
        let count = Int(min(UInt64(min(Int(request.maxCount), maxRangeCount)), request.to - request.from + 1))
        let maxBytes = maxRangeBytes
        let quarantine = quarantine
        let records = try await writer.run { log in
            try log.read(from: request.from, maxCount: count, maxBytes: maxBytes).map(quarantine.deliverable)
        }
        let frames = RangeMessage.frames(
            request: request.request,
            epoch: await core.epoch,
            head: await core.durableHead,
            records: records
        )
        try await socket.send(peer.reply(frames))
    }

    private func serveSnapshot(_ request: SnapshotRequest, to peer: RouterEnvelope) async throws {
        let (seq, instances) = await core.replica.snapshot()
        let epoch = await core.epoch
        logger.info("serving a snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"])
        let chunks = SnapshotChunking.chunks(instances, maxChunkBytes: maxChunkBytes)
        for (index, chunk) in chunks.enumerated() {
            let message = SnapshotChunkMessage(
                request: request.request, seq: seq, epoch: epoch, chunk: UInt32(index), isLast: index == chunks.count - 1, instances: chunk
            )
            try await socket.send(peer.reply(message.frames))
        }
    }
}
