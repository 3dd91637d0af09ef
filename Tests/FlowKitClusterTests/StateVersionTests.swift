@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
import Logging
import Testing

/// A snapshot's states say which version of their flow wrote them; a process restores none its
/// build cannot read (docs/VERSIONING.md, guarantee 3).
@Suite struct StateVersionTests {
    static func registry(counterVersion: Int) -> FlowRegistry {
        var registry = FlowRegistry()
        // Each release kept the shapes: every version reads every older one as it is.
        let migrations = (1..<counterVersion).reduce(FlowMigrations<CounterFlow>()) { $0.eventsUnchanged(from: $1).stateUnchanged(from: $1) }
        registry.register(
            CounterFlow.self, as: "counter", version: counterVersion, migrations: migrations, initialState: { _ in CounterFlow.initialState },
            flow: { CounterFlow() }
        )
        return registry
    }

    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func aRecordCarriesItsVersionOnlyWhenItIsNotOne() throws {
        let one = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 3, state: Array(#"{"count":1}"#.utf8))
        var two = one
        two.stateVersion = 2
        let message = SnapshotChunkMessage(request: 1, seq: 3, epoch: 1, chunk: 0, isLast: true, instances: [one, two])
        let frames = message.frames
        #expect(try SnapshotChunkMessage(frames: frames).instances == [one, two])
        // 4 + 2 + 9 + 8 + 11 bytes for version 1 (length, address, last seq, state), 3 more for 2.
        #expect(frames[1].count == 34 + 37)
        // Split across chunks, the first piece keeps the version.
        var large = two
        large.state = Array(repeating: UInt8(ascii: " "), count: 100) + large.state
        var joined: [SnapshotChunkMessage.Instance] = []
        for chunk in SnapshotChunking.chunks([large], maxChunkBytes: 40) {
            let sent = SnapshotChunkMessage(request: 1, seq: 3, epoch: 1, chunk: 0, isLast: false, instances: chunk)
            try SnapshotChunking.append(try SnapshotChunkMessage(frames: sent.frames).instances, to: &joined)
        }
        #expect(joined == [large])
    }

    /// The fuzzer's find: a record with its blocks written out though empty (version 1, no
    /// owners) and a state that starts with byte 0 decoded, but written again without the blocks
    /// it read as an ownership block. A state starting with 0 or 1 is refused now.
    @Test func aStateThatCouldReadAsABlockIsRefused() throws {
        func record(_ blocks: [UInt8], state: [UInt8]) -> [[UInt8]] {
            var body = ByteWriter(capacity: 64)
            body.writeLengthPrefixed { writer in
                writer.writeShortString("counter/a")
                writer.write(7 as UInt64)
                writer.write(contentsOf: blocks + state)
            }
            let header = SnapshotChunkMessage(request: 1, seq: 7, epoch: 1, chunk: 0, isLast: true, instances: []).frames[0]
            return [header, body.bytes]
        }
        let emptyOwnership: [UInt8] = [0] + [UInt8](repeating: 0, count: 8) + [0] + [0, 0]
        let cases: [(blocks: [UInt8], state: [UInt8])] = [([1, 0, 1] + emptyOwnership, [0, 0, 126]), (emptyOwnership, [1, 0, 2]), ([], [0, 1])]
        for (blocks, state) in cases {
            let error = #expect(throws: ProtocolError.self) { try SnapshotChunkMessage(frames: record(blocks, state: state)) }
            #expect(error?.code == .malformed || error?.code == .truncated, "\(String(describing: error))")
        }
        // The same blocks before a JSON state decode, and survive a round trip.
        let decoded = try SnapshotChunkMessage(frames: record([1, 0, 1] + emptyOwnership, state: Array("{}".utf8)))
        #expect(try SnapshotChunkMessage(frames: decoded.frames) == decoded)
    }

    @Test func aReplicaSetWritesItsFlowsVersionAndRestoresNoNewerState() throws {
        let newer = ReplicaSet(registry: Self.registry(counterVersion: 2), logger: Self.logger)
        newer.apply(
            Entry(
                seq: 1, epoch: 1, kind: .event, codec: .json, version: 2, origin: 1, session: 1, submission: 1, submittedAt: 0, committedAt: 0,
                address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8)
            ),
            runEffects: false
        )
        let exported = newer.exportStates()
        #expect(exported.map(\.stateVersion) == [2])

        let older = ReplicaSet(registry: Self.registry(counterVersion: 1), logger: Self.logger)
        let error = #expect(throws: UnreadableEntry.self) { try older.importStates(exported) }
        #expect(error == UnreadableEntry(seq: 1, flow: "counter", version: 2, reads: 1, inSnapshot: true))
        #expect(error.map { "\($0)" }?.hasPrefix(#"a snapshot's state of flow "counter" (after entry 1) is at version 2"#) == true)
        // A build that reads version 2, or 3, restores it.
        let same = ReplicaSet(registry: Self.registry(counterVersion: 3), logger: Self.logger)
        try same.importStates(exported)
        #expect(same.count == 1)
    }

    /// A node joining through a snapshot with a state it cannot read restores nothing and stops,
    /// as before an entry it cannot read: no snapshot asked for again and again.
    @Test func aFollowerStopsBeforeASnapshotItCannotRead() {
        var follower = LogFollower(versions: ReadableVersions(Self.registry(counterVersion: 1)))
        guard case .requestSnapshot(let request)? = follower.startSnapshot(now: 0).first else {
            Issue.record("no snapshot request")
            return
        }
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 7, state: Array("{}".utf8), stateVersion: 2)
        let done = follower.receive(SnapshotChunkMessage(request: request.request, seq: 9, epoch: 1, chunk: 0, isLast: true, instances: [instance]), now: 1)
        #expect(done.isEmpty)
        #expect(follower.unreadable == UnreadableEntry(seq: 7, flow: "counter", version: 2, reads: 1, inSnapshot: true))
        #expect(follower.applied == 0 && !follower.isJoining)
        #expect(follower.tick(now: 100_000_000).isEmpty, "nothing asked again")
    }
}
