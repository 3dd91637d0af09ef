/// A standby's fetch of the leader's snapshot, for ``StandbyCopy``: the chunks of its SNAPSHOT
/// request (every instance's state at a committed seq, and the sessions the duplicate table
/// remembers), then its RANGE request for the entry at that seq, whose epoch the copy's next
/// FETCH names.
struct SnapshotInstall: Equatable {
    /// The request answered now: the SNAPSHOT's, then the RANGE's.
    private(set) var request: UInt64
    /// When it last heard from the leader (or asked).
    private(set) var heardAt: UInt64
    private var instances: [SnapshotChunkMessage.Instance] = []
    private var sessions: [DedupTable.Remembered] = []
    private var nextChunk: UInt32 = 0
    /// Set once the last chunk arrived.
    private var seq: UInt64?

    enum Step: Equatable {
        /// More chunks to come.
        case waiting
        /// Something went missing: ask for the snapshot again.
        case restart
        /// Send this RANGE request for the entry at the snapshot's seq.
        case ask(RangeRequest)
        /// Ready: install it.
        case ready(seq: UInt64, epoch: UInt32, instances: [SnapshotChunkMessage.Instance], sessions: [DedupTable.Remembered])
    }

    init(request: UInt64, now: UInt64) {
        self.request = request
        self.heardAt = now
    }

    /// The SNAPSHOT request that starts it.
    var snapshotRequest: SnapshotRequest { SnapshotRequest(request: request, withSessions: true) }

    /// A chunk; after the last, the RANGE request goes out under `nextRequest`.
    mutating func received(_ chunk: SnapshotChunkMessage, nextRequest: UInt64, now: UInt64) -> Step {
        guard seq == nil, chunk.request == request else { return .waiting }
        // A chunk lost on the way leaves the snapshot short: start it again.
        guard chunk.chunk == nextChunk, (try? SnapshotChunking.append(chunk.instances, to: &instances)) != nil else { return .restart }
        nextChunk += 1
        heardAt = now
        guard chunk.isLast else { return .waiting }
        seq = chunk.seq
        sessions = chunk.sessions
        request = nextRequest
        return .ask(RangeRequest(request: request, from: chunk.seq, to: chunk.seq, maxCount: 1))
    }

    /// The answer to the RANGE request.
    func received(_ range: RangeMessage) -> Step {
        guard let seq, range.request == request else { return .waiting }
        guard let entry = range.entries.first, entry.seq == seq else { return .restart }
        return .ready(seq: seq, epoch: entry.epoch, instances: instances, sessions: sessions)
    }

    /// The leader refused the request at `now`: asked again after `pause`, as if heard from
    /// then, given that it is asked again `retryAfter` after it last heard.
    mutating func refused(now: UInt64, pause: UInt64, retryAfter: UInt64) {
        heardAt = now + pause - min(retryAfter, now + pause)
    }
}
