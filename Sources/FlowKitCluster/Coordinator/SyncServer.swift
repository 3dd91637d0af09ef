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
        let (maxCount, maxBytes, quarantine) = (maxRangeCount, maxRangeBytes, quarantine)
        let records = try await writer.run { log in
            try Self.records(for: request, in: log, maxCount: maxCount, maxBytes: maxBytes, quarantine: quarantine)
        }
        let frames = RangeMessage.frames(request: request.request, epoch: await core.epoch, head: await core.durableHead, records: records)
        try await socket.send(peer.reply(frames))
    }

    private func serveSnapshot(_ request: SnapshotRequest, to peer: RouterEnvelope) async throws {
        let (seq, instances) = await core.replica.snapshot()
        logger.info("serving a snapshot", metadata: ["flowkit.seq": "\(seq)", "flowkit.instances": "\(instances.count)"])
        for frames in Self.snapshotChunks(request, seq: seq, epoch: await core.epoch, instances: instances, maxChunkBytes: maxChunkBytes) {
            try await socket.send(peer.reply(frames))
        }
    }

    /// The log's records a range request asks for, within the limits; entries no message can
    /// carry as their quarantined stand-ins.
    static func records(
        for request: RangeRequest, in log: any EntryLog, maxCount: Int, maxBytes: Int, quarantine: EntryQuarantine
    ) throws -> [[UInt8]] {
        let count = Int(min(UInt64(min(Int(request.maxCount), maxCount)), request.to - request.from + 1))
        return try log.read(from: request.from, maxCount: count, maxBytes: maxBytes).map(quarantine.deliverable)
    }

    /// A snapshot as the SNAPSHOT_CHUNK messages that carry it, in order.
    static func snapshotChunks(
        _ request: SnapshotRequest, seq: UInt64, epoch: UInt32, instances: [SnapshotChunkMessage.Instance], maxChunkBytes: Int
    ) -> [[[UInt8]]] {
        let chunks = SnapshotChunking.chunks(instances, maxChunkBytes: maxChunkBytes)
        return chunks.enumerated().map { index, chunk in
            SnapshotChunkMessage(
                request: request.request, seq: seq, epoch: epoch, chunk: UInt32(index), isLast: index == chunks.count - 1, instances: chunk
            ).frames
        }
    }
}
