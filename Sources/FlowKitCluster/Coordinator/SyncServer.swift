import FlowKitCore
import Logging
import ZeroMQ

/// What the sync socket serves from: the coordinator that orders (``CoordinatorCore``), or, among
/// replicated coordinators, whichever role this one has now.
protocol SyncSource: Sendable {
    /// Everything up to here may be served, and the term to name.
    func committed() async -> (head: UInt64, epoch: UInt32)
    /// A standby's FETCH (``CoordinatorMachine/fetch(_:firstSeq:now:)``).
    func fetch(_ request: FetchRequest) async throws -> (answer: FetchAnswer, committed: UInt64, epoch: UInt32)
    /// Every instance's state, for snapshots.
    var replica: CoordinatorReplica { get }
}

/// Serves the coordinator's sync socket: log ranges for gap repair, snapshots for late joiners,
/// and, when it leads other coordinators, their FETCHes.
///
/// Reads go through the log thread between commits, and snapshots come from the coordinator's
/// replica: neither stops the order. A FETCH goes through the ordering core once, when it arrives
/// (how far the standby holds the log counts for the commit point there); one with nothing new to
/// answer is held, the latest of each standby, until the log grows (``written``) or ``fetchWait``
/// passes. The growth is answered from the ``feed`` of durable groups, so a standby hears of a
/// write at once, while the core syncs the next one.
struct SyncServer: Sendable {
    let socket: AsyncSocket
    let writer: LogWriter
    let source: any SyncSource
    let counters: ClusterCounters
    let quarantine: EntryQuarantine
    let maxRangeCount: Int
    let logger: Logger
    /// The snapshot being encoded, shared by every request that arrives meanwhile.
    let snapshots: SnapshotEncoding
    /// The most state bytes in one snapshot chunk; a larger state is split (``SnapshotChunking``).
    let maxChunkBytes = 1 << 20
    let maxRangeBytes = 4 << 20
    /// Each growth of the local log, when this coordinator leads others; `nil` when it runs
    /// alone, and then FETCH is refused.
    var written: AsyncStream<Void>? = nil
    /// The leader's latest durable groups: FETCHes that end among them, and held ones, are
    /// answered from here.
    var feed: ReplicationFeed? = nil
    /// Told when a standby's durable end waits in the ``feed`` for the core.
    var reported: AsyncStream<Void>.Continuation? = nil
    /// How long a FETCH with nothing to answer is held.
    var fetchWait: Duration = .milliseconds(200)
    /// Notes when sampled entries leave in a FETCHED (`flowkit bench --trace`).
    var trace: HopTrace? = nil
    /// Whether this coordinator's lease still holds: a FETCHED leaves only then, as a reply or a
    /// publication does (``CoordinatorInterpreter``). A leader woken past its lease hands nothing
    /// it ordered meanwhile to a standby, which may be about to lead. `nil`: it runs alone.
    var mayAct: (@Sendable () -> Bool)? = nil

    private enum Event {
        case requests([Message])
        /// The log grew, or time passed: look at the held FETCHes again.
        case recheck
    }

    /// A FETCH held until there is something to answer.
    private struct HeldFetch {
        var peer: RouterEnvelope
        var request: FetchRequest
        var since: ContinuousClock.Instant
    }

    func run() async {
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        await withDiscardingTaskGroup { group in
            group.addTask {
                while let batch = try? await socket.receiveBatch(max: 64) { continuation.yield(.requests(batch)) }
                continuation.finish()
            }
            if let written {
                group.addTask {
                    for await _ in written { continuation.yield(.recheck) }
                }
                group.addTask {
                    await every(.milliseconds(50)) { continuation.yield(.recheck) }
                }
            }
            // The latest FETCH of each standby: a newer one replaces it, unanswered.
            var held: [String: HeldFetch] = [:]
            for await event in events {
                switch event {
                case .requests(let batch):
                    for message in batch {
                        guard let (peer, body) = RouterEnvelope.split(message) else { continue }
                        switch try? SyncRequest(frames: body) {
                        case .fetch(let request)?:
                            held[request.id] = nil
                        case .snapshot(let request)?:
                            // Beside the rest: a snapshot of a million instances takes seconds to
                            // encode, which FETCHes (and so commits) and range repairs must not wait for.
                            group.addTask { await serveSnapshot(request, body: body, to: peer) }
                            continue
                        default:
                            break
                        }
                        if let waiting = await serve(body, from: peer) { held[waiting.request.id] = waiting }
                    }
                case .recheck:
                    for (id, fetch) in held {
                        held[id] = await answerHeld(fetch)
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// Answers one request; returns a FETCH to hold.
    private func serve(_ body: [[UInt8]], from peer: RouterEnvelope) async -> HeldFetch? {
        do {
            switch try SyncRequest(frames: body) {
            case .range(let request):
                try await serveRange(request, to: peer)
            case .snapshot(let request):
                await serveSnapshot(request, body: body, to: peer)
            case .fetch(let request):
                guard written != nil else {
                    throw ProtocolError(.unknownType, "FETCH is for replicated coordinators; this coordinator runs alone")
                }
                let fetch = HeldFetch(peer: peer, request: request, since: .now)
                // A standby that agrees with the entries in the feed (the usual case, and several
                // times a group): no turn through the core, which may be syncing; its durable end
                // goes on as a report.
                if let feed, feed.agrees(end: request.end, endEpoch: request.endEpoch, epoch: request.epoch) {
                    if feed.report(request.id, durable: request.durable) { reported?.yield() }
                    return await answerHeld(fetch)
                }
                return await answer(fetch)
            }
        } catch {
            await refuse(body, from: peer, error)
        }
        return nil
    }

    private func refuse(_ body: [[UInt8]], from peer: RouterEnvelope, _ error: any Error) async {
        let protocolError = error as? ProtocolError ?? ProtocolError(.internalError, "\(error)")
        if protocolError.code != .notFound { counters.count(rejected: protocolError.code) }
        let request = (try? SyncRequest(frames: body))?.request ?? 0
        try? await socket.send(peer.reply(ErrorReply(request: request, error: protocolError).frames))
    }

    /// Answers a FETCH as it arrives, through the ordering core, or returns it to hold while there
    /// is nothing new.
    private func answer(_ fetch: HeldFetch) async -> HeldFetch? {
        let request = fetch.request
        let frames: [[UInt8]]
        var sent: [[UInt8]] = []
        do {
            let (answer, committed, epoch) = try await source.fetch(request)
            let (writer, feed, maxRangeCount, maxRangeBytes) = (writer, feed, maxRangeCount, maxRangeBytes)
            let answered = try await Self.fetched(answer, to: request, committed: committed, epoch: epoch, mayHold: true, maxBytes: maxRangeBytes) { from, maxBytes in
                // Byte for byte as the log holds them: the standby's log is a copy.
                if case .records(let records, _)? = feed?.read(from: from, epoch: epoch, maxBytes: maxBytes) {
                    sent = records
                } else {
                    sent = try await writer.run { log in try log.read(from: from, maxCount: maxRangeCount, maxBytes: maxBytes) }
                }
                return sent
            }
            guard let answered else { return fetch }
            frames = answered
        } catch {
            await refuse(request.frames, from: fetch.peer, error)
            return nil
        }
        guard mayAct?() != false else { return nil }
        try? await socket.send(fetch.peer.reply(frames))
        trace?.note(records: sent, .leaderFetchedSent, at: WallClock.micros())
        return nil
    }

    /// Answers a held FETCH from the ``feed`` once the log has grown past its end; or with no
    /// records once it has waited ``fetchWait`` (the standby asks again), or when the feed cannot
    /// answer it (another term, or fallen behind what the feed keeps: the standby's next FETCH
    /// goes through the core and reads the log). Returns it to hold it longer.
    private func answerHeld(_ fetch: HeldFetch) async -> HeldFetch? {
        let request = fetch.request
        let read = feed?.read(from: request.end + 1, epoch: request.epoch, maxBytes: min(Int(request.maxBytes), maxRangeBytes)) ?? .unavailable
        let answer: FetchedMessage
        switch read {
        case .records(let records, let committed):
            answer = FetchedMessage(request: request.request, epoch: request.epoch, committed: committed, records: records)
        case .nothingYet(let committed):
            guard ContinuousClock.now - fetch.since >= fetchWait else { return fetch }
            answer = FetchedMessage(request: request.request, epoch: request.epoch, committed: committed, records: [])
        case .unavailable:
            answer = FetchedMessage(request: request.request, epoch: request.epoch, committed: 0, records: [])
        }
        // Past the lease the FETCH is dropped: the standby asks again, of whoever leads by then.
        guard mayAct?() != false else { return nil }
        try? await socket.send(fetch.peer.reply(answer.frames))
        trace?.note(records: answer.records, .leaderFetchedSent, at: WallClock.micros())
        return nil
    }

    /// The FETCHED that answers `request`, or `nil` to hold it a while longer (nothing new, and
    /// `mayHold`); records are read with `read(from:maxBytes:)`.
    ///
    /// - Throws: ``ProtocolError/Code/notFound`` when the standby is behind the retained log.
    static func fetched(
        _ answer: FetchAnswer, to request: FetchRequest, committed: UInt64, epoch: UInt32, mayHold: Bool, maxBytes: Int,
        read: (UInt64, Int) async throws -> [[UInt8]]
    ) async throws -> [[UInt8]]? {
        switch answer {
        case .wait:
            if mayHold { return nil }
            return FetchedMessage(request: request.request, epoch: epoch, committed: committed, records: []).frames
        case .entries(let from):
            let records = try await read(from, min(Int(request.maxBytes), maxBytes))
            return FetchedMessage(request: request.request, epoch: epoch, committed: committed, records: records).frames
        case .truncate(let keep):
            return FetchedMessage(request: request.request, epoch: epoch, committed: committed, keep: keep, records: []).frames
        case .behindRetention(let firstSeq):
            throw ProtocolError(.notFound, "\(request.id) holds the log to \(request.durable), but this log starts at \(firstSeq): rebuild from a snapshot")
        }
    }

    private func serveRange(_ request: RangeRequest, to peer: RouterEnvelope) async throws {
        let (maxCount, maxBytes, quarantine) = (maxRangeCount, maxRangeBytes, quarantine)
        // Only what is committed: replicated, the log may hold entries no one may see yet.
        let (committed, epoch) = await source.committed()
        let records = try await writer.run { log in
            try Self.records(for: request, in: log, committed: committed, maxCount: maxCount, maxBytes: maxBytes, quarantine: quarantine)
        }
        let frames = RangeMessage.frames(request: request.request, epoch: epoch, head: committed, records: records)
        try await socket.send(peer.reply(frames))
    }

    /// Serves a snapshot (``SnapshotEncoding``), made into this request's chunks on the background
    /// thread.
    private func serveSnapshot(_ request: SnapshotRequest, body: [[UInt8]], to peer: RouterEnvelope) async {
        do {
            let snapshot = try await snapshots.current()
            let epoch = await source.committed().epoch
            let maxChunkBytes = maxChunkBytes
            let chunks = try await BackgroundWork.shared.run {
                try Self.snapshotChunks(request, seq: snapshot.seq, epoch: epoch, records: snapshot.records, maxChunkBytes: maxChunkBytes)
            }
            logger.info(
                "serving a snapshot",
                metadata: ["flowkit.seq": "\(snapshot.seq)", "flowkit.instances": "\(snapshot.count)", "flowkit.saved": "\(snapshot.isSaved)"]
            )
            for frames in chunks {
                try await socket.send(peer.reply(frames))
            }
        } catch {
            await refuse(body, from: peer, error)
        }
    }

    /// The log's records a range request asks for, within the limits; entries no message can
    /// carry as their quarantined stand-ins.
    static func records(
        for request: RangeRequest, in log: any EntryLog, committed: UInt64, maxCount: Int, maxBytes: Int, quarantine: EntryQuarantine
    ) throws -> [[UInt8]] {
        let to = min(request.to, committed)
        guard to >= request.from else { return [] }
        let count = Int(min(UInt64(min(Int(request.maxCount), maxCount)), to - request.from + 1))
        return try log.read(from: request.from, maxCount: count, maxBytes: maxBytes).map(quarantine.deliverable)
    }

    /// A snapshot as the SNAPSHOT_CHUNK messages that carry it, in order: its records cut where
    /// they end (``SnapshotRecords/chunks(maxChunkBytes:)``), its sessions frame as it lies.
    static func snapshotChunks(_ request: SnapshotRequest, seq: UInt64, epoch: UInt32, records snapshot: SnapshotRecords, maxChunkBytes: Int) throws -> [[[UInt8]]] {
        let records = try snapshot.chunks(maxChunkBytes: maxChunkBytes)
        let sessions = snapshot.sessionsFrame
        return records.enumerated().map { index, chunk in
            let isLast = index == records.count - 1
            return SnapshotChunkMessage.frames(
                request: request.request, seq: seq, epoch: epoch, chunk: UInt32(index), isLast: isLast, records: chunk,
                sessions: isLast && request.withSessions ? sessions : []
            )
        }
    }
}
