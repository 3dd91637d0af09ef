@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import Logging
import Testing

/// Every message the coordinator sends stays within the transport's frame limit, however large
/// what it carries: entries are packed with a large one alone, snapshots split large states, and
/// an entry no frame can carry is served as a quarantined stand-in.
@Suite struct MessageSizeTests {
    static func record(_ size: Int) -> [UInt8] { [UInt8](repeating: 7, count: size) }

    @Test func recordsArePackedWithinTheirLimitsAndALargeOneTravelsAlone() {
        let packer = RecordPacker(maxCount: 3, maxBytes: 100)
        let records = [10, 10, 10, 10, 500, 20, 70, 20].map(Self.record)
        let frames = packer.pack(records)
        #expect(frames.map(\.count) == [3, 1, 1, 2, 1])
        for frame in frames where frame.count > 1 { #expect(frame.frame.count <= 100) }
        #expect(frames[2].frame.count == 504, "the large record alone, with its length")
        // Nothing lost, nothing reordered.
        var unpacked: [[UInt8]] = []
        for frame in frames {
            var reader = ByteReader(frame.frame, context: "test")
            unpacked += try! reader.mapRecords("record") { $0.readRest() }
        }
        #expect(unpacked == records)
    }

    /// Runs of one instance are packed too: a hundred large events to one instance in one group
    /// commit used to make one message of all of them.
    @Test func runsOfOneInstanceArePacked() {
        let entries = (1...6).map { seq in
            Entry(
                seq: UInt64(seq), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(seq), submittedAt: 0,
                committedAt: 0, address: seq <= 4 ? "kv/big" : "kv/small", payload: Self.record(seq <= 4 ? 60 : 5)
            )
        }
        let runs = entryRuns(entries, records: entries.map { ($0.seq, $0.encoded) }, packer: RecordPacker(maxCount: 10, maxBytes: 300))
        #expect(runs.map(\.address) == ["kv/big", "kv/big", "kv/small"])
        #expect(runs.map(\.count) == [2, 2, 2])
        #expect(runs.allSatisfy { $0.records.count <= 300 })
    }

    @Test func largeStatesAreSplitIntoContinuationsAndJoinedAgain() throws {
        let instances = [
            SnapshotChunkMessage.Instance(address: "kv/a", lastSeq: 3, state: Self.record(10)),
            // States are JSON, which never starts with byte 0 or 1; its continuations may.
            SnapshotChunkMessage.Instance(
                address: "kv/big", lastSeq: 9, state: Array((2...2_501).map { UInt8(truncatingIfNeeded: $0) }),
                ownership: .init(owners: [EffectOwner(node: 2, session: 7)], fence: 8)
            ),
            SnapshotChunkMessage.Instance(address: "kv/empty", lastSeq: 4, state: []),
            SnapshotChunkMessage.Instance(address: "kv/z", lastSeq: 5, state: Self.record(30)),
        ]
        let chunks = SnapshotChunking.chunks(instances, maxChunkBytes: 1_000)
        #expect(chunks.count >= 3)
        for chunk in chunks {
            // Each chunk round-trips the wire and stays near its bound.
            let message = SnapshotChunkMessage(request: 1, seq: 9, epoch: 1, chunk: 0, isLast: false, instances: chunk)
            #expect(message.frames[1].count <= 2 * 1_000 + 100)
            #expect(try SnapshotChunkMessage(frames: message.frames).instances == chunk)
        }
        var joined: [SnapshotChunkMessage.Instance] = []
        for chunk in chunks { try SnapshotChunking.append(chunk, to: &joined) }
        #expect(joined == instances)
        var orphan: [SnapshotChunkMessage.Instance] = []
        #expect(throws: ProtocolError.self) {
            try SnapshotChunking.append([.init(address: "", lastSeq: 0, state: [1])], to: &orphan)
        }
    }

    /// A saved snapshot is served as its bytes lie: chunks cut where records end, a state larger
    /// than a chunk split as ``SnapshotChunking`` splits it, the sessions frame as it lies. What a
    /// node puts together from the chunks is the snapshot's instances and sessions.
    @Test func aSavedSnapshotIsCutWhereItsRecordsEnd() throws {
        let instances = (0..<40).map { index in
            SnapshotChunkMessage.Instance(
                address: "kv/\(index)", lastSeq: UInt64(index + 1),
                state: index == 17 ? Array((2...2_501).map { UInt8(truncatingIfNeeded: $0) }) : Self.record(20 + index),
                ownership: index % 5 == 0 ? .init(owners: [EffectOwner(node: 2, session: 7)], fence: 3) : .init(), stateVersion: index % 7 == 0 ? 2 : 1
            )
        }
        let sessions = [DedupTable.Remembered(origin: 1, session: 9, watermark: 40, lastSeq: 40, above: [])]
        for remembered in [[], sessions] {
            let saved = try SnapshotRecords(SnapshotCodec.encode(instances, sessions: remembered))
            #expect(saved.count == instances.count)
            let request = SnapshotRequest(request: 4, withSessions: true)
            let chunks = try SyncServer.snapshotChunks(request, seq: 40, epoch: 2, records: saved, maxChunkBytes: 1_000)
            var joined: [SnapshotChunkMessage.Instance] = []
            var received: [DedupTable.Remembered] = []
            for (index, frames) in chunks.enumerated() {
                let message = try SnapshotChunkMessage(frames: frames)
                #expect(message.chunk == UInt32(index) && message.isLast == (index == chunks.count - 1) && message.seq == 40)
                #expect(frames[1].count <= 1_000 + 100, "chunk \(index) holds \(frames[1].count) bytes of records")
                try SnapshotChunking.append(message.instances, to: &joined)
                received += message.sessions
            }
            #expect(joined == instances)
            #expect(received == remembered)
        }
        #expect(throws: ProtocolError.self) { try SnapshotRecords([0, 0, 0, 9, 1, 2]) }
    }

    /// A snapshot whose chunk went missing on the way is asked for again, not restored short.
    @Test func aMissingSnapshotChunkRestartsTheSnapshot() {
        var follower = LogFollower()
        guard case .requestSnapshot(let first) = follower.startSnapshot(now: 0).first else {
            Issue.record("no snapshot request")
            return
        }
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 5, state: Array("{}".utf8))
        #expect(follower.receive(SnapshotChunkMessage(request: first.request, seq: 5, epoch: 1, chunk: 0, isLast: false, instances: [instance]), now: 1).isEmpty)
        let actions = follower.receive(
            SnapshotChunkMessage(request: first.request, seq: 5, epoch: 1, chunk: 2, isLast: true, instances: [instance]), now: 2
        )
        guard case .requestSnapshot(let again) = actions.first else {
            Issue.record("chunk 1 was skipped and the snapshot restored anyway: \(actions)")
            return
        }
        #expect(again.request != first.request)
        #expect(follower.isJoining)
    }

    @Test func anEntryNoFrameCanCarryIsServedAsAQuarantinedStandIn() throws {
        let quarantine = EntryQuarantine(frameLimit: 1_000)
        let small = Entry(
            seq: 4, epoch: 2, kind: .event, codec: .json, origin: 3, session: 9, submission: 11, submittedAt: 5, committedAt: 6,
            address: "kv/a", payload: Self.record(100)
        )
        var large = small
        large.payload = Self.record(939)
        #expect(large.encoded.count == 997)
        #expect(try quarantine.deliverable(small.encoded) == small.encoded)
        var atTheLimit = small
        atTheLimit.payload = Self.record(938)
        #expect(try quarantine.deliverable(atTheLimit.encoded) == atTheLimit.encoded, "996 bytes: a frame of 1,000 with its length")
        let served = try Entry(decoding: try quarantine.deliverable(large.encoded))
        #expect(served.kind == .quarantined)
        #expect(served.payload == [0, 0, 0, 0, 0, 0, 0x03, 0xAB], "the original payload's size, 939")
        #expect([served.seq, UInt64(served.epoch), UInt64(served.origin), served.session, served.submission] == [4, 2, 3, 9, 11])
        #expect(served.address == "kv/a")
        // Every replica skips it, and moves on.
        let replicas = ReplicaSet(registry: AdmissionTests.registry, logger: Logger(label: "test"))
        replicas.apply(served, runEffects: false)
        #expect(replicas.count == 0)
        #expect(replicas.skippedEntries == 1)
    }

    /// Whoever reads the log for a replica (a coordinator recovering, a standby applying what is
    /// committed, the simulation) gets the stand-in the nodes are served, so every replica skips
    /// the same entries. (A replicated coordinator's replica once applied the entry itself.)
    @Test func everyReaderOfTheLogAppliesTheStandInTheNodesAreServed() throws {
        let quarantine = EntryQuarantine(frameLimit: 1_000)
        var entry = Entry(
            seq: 4, epoch: 2, kind: .event, codec: .json, origin: 3, session: 9, submission: 11, submittedAt: 5, committedAt: 6,
            address: "kv/a", payload: Self.record(100)
        )
        let small = try quarantine.entry(entry.encoded)
        #expect(!small.quarantined && small.entry.encoded == entry.encoded)
        entry.payload = Self.record(941)
        let large = try quarantine.entry(entry.encoded)
        #expect(large.quarantined && large.entry.kind == .quarantined)
        #expect(large.entry.encoded == (try quarantine.deliverable(entry.encoded)))
    }
}
