@_spi(Wire) @testable import FlowKitCluster
import FlowKit
import Testing

@Suite struct ProtocolCodecTests {
    static let entry = Entry(
        seq: 42, epoch: 3, kind: .event, codec: .json, origin: 2, session: 0xDEAD_BEEF, submission: 7,
        submittedAt: 1_700_000_000_000_000, committedAt: 1_700_000_000_000_500,
        address: "counter/room-1", payload: Array(#"{"increment":{}}"#.utf8)
    )

    @Test func entryRecordsRoundTripAndHaveTheDocumentedLayout() throws {
        let bytes = Self.entry.encoded
        #expect(try Entry(decoding: bytes) == Self.entry)
        // seq is the first 8 bytes, big-endian; the version follows kind and codec; the address
        // follows the 52-byte fixed part.
        #expect(Array(bytes[0..<8]) == [0, 0, 0, 0, 0, 0, 0, 42])
        #expect(Array(bytes[12..<16]) == [1, 1, 0, 1], "kind 1, codec 1, version 1")
        #expect(Array(bytes[52..<54]) == [0, 14])
        #expect(String(decoding: bytes[54..<68], as: UTF8.self) == "counter/room-1")
        #expect(Array(bytes[68...]) == Self.entry.payload)
    }

    /// A record in the layout before versions (protocol 3, log segments of payload format 0) reads
    /// in today's: an event as version 1, anything else as 0, every other field as it was.
    @Test func recordsWrittenBeforeVersionsReadAsVersionOne() throws {
        for (kind, version) in [(EntryKind.event, 1 as UInt16), (.cancel, 0), (.takeover, 0)] {
            var entry = Self.entry
            entry.kind = kind
            entry.version = version
            var old = entry.encoded
            old.removeSubrange(Entry.versionOffset..<Entry.versionOffset + 2)
            #expect(old.count == entry.encoded.count - 2)
            #expect(try Entry(decoding: Entry.RecordLayout.unversioned.upgrade(old)) == entry)
            #expect(Entry.RecordLayout.versioned.upgrade(entry.encoded) == entry.encoded)
        }
        // Too short to hold the fields: decoding says so rather than the upgrade guessing.
        #expect(throws: ProtocolError.self) { try Entry(decoding: Entry.RecordLayout.unversioned.upgrade([0, 1, 2])) }
    }

    @Test func everyMessageRoundTrips() throws {
        let submission = Submission(
            submission: 9, kind: .cancel, codec: .json, version: 0, submittedAt: 5, address: "timer/t", payload: Array("timer".utf8)
        )
        let submit = SubmitMessage(origin: 1, session: 77, submissions: [submission, submission])
        #expect(try SubmitMessage(frames: submit.frames) == submit)

        let ack = AckMessage(epoch: 2, head: 10, acks: [
            .init(submission: 9, seq: 10, status: .ordered),
            .init(submission: 8, seq: 0, status: .refused, reason: .overloaded),
        ])
        #expect(try AckMessage(frames: ack.frames) == ack)

        let entries = EntriesMessage(address: "counter/room-1", epoch: 3, entries: [Self.entry, { var e = Self.entry; e.seq = 43; return e }()])
        #expect(try EntriesMessage(frames: entries.frames) == entries)
        // Seqs that do not follow one another are refused; after UInt64.max nothing follows (the
        // fuzzer's input: the check overflowed and trapped).
        for seqs: [UInt64] in [[42, 44], [.max, 0], [.max, .max]] {
            let message = EntriesMessage(address: "counter/room-1", epoch: 3, entries: seqs.map { seq in var e = Self.entry; e.seq = seq; return e })
            #expect(throws: ProtocolError.self, "seqs \(seqs)") { try EntriesMessage(frames: message.frames) }
        }

        let heartbeat = HeartbeatMessage(epoch: 1, head: 99, time: 123)
        #expect(try HeartbeatMessage(frames: heartbeat.frames) == heartbeat)

        let range = RangeMessage(request: 5, epoch: 1, head: 50, entries: [Self.entry])
        #expect(try RangeMessage(frames: range.frames) == range)

        let chunk = SnapshotChunkMessage(request: 1, seq: 9, epoch: 1, chunk: 0, isLast: true, instances: [
            .init(address: "counter/a", lastSeq: 3, state: Array(#"{"count":1}"#.utf8)),
        ])
        #expect(try SnapshotChunkMessage(frames: chunk.frames) == chunk)

        let hello = HelloMessage(node: 1, session: 2, info: NodeInfo(name: "node-1", clientEndpoint: "tcp://x:1", flows: ["counter"], pid: 9))
        #expect(try HelloMessage(frames: hello.frames) == hello)

        for request in [
            ClientRequest.emit(request: 1, wait: .applied, codec: .json, address: "counter/a", payload: [1, 2]),
            .query(request: 2, minApplied: 7, address: "counter/a"),
            .cancel(request: 3, wait: .ordered, address: "timer/a", id: "timer"),
            .cancel(request: 4, wait: .ordered, address: "timer/a", id: nil),
            .status(request: 5),
        ] {
            #expect(try ClientRequest(frames: request.frames) == request)
        }
        for reply in [
            ClientReply.emitted(request: 1, seq: 2, epoch: 3, applied: true),
            .state(request: 2, applied: 9, lastSeq: 4, digest: Array(repeating: 7, count: 16), state: [1]),
            .status(request: 3, json: Array("{}".utf8)),
            .error(request: 4, ProtocolError(.unknownFlow, "no flow \"x\"")),
        ] {
            #expect(try ClientReply(frames: reply.frames) == reply)
        }
    }

    @Test(arguments: [
        ([[UInt8]](), ProtocolError.Code.wrongFrameCount),
        ([[0x46]], .truncated),
        ([[0x00, 0x00, 1, 0x30]], .badMagic),
        ([[0x46, 0x4B, 9, 0x30]], .unsupportedVersion),
        ([[0x46, 0x4B, WireHeader.version, 0x99]], .unknownType),
        ([[0x46, 0x4B, WireHeader.version, 0x10]], .unknownType),
        ([[0x46, 0x4B, WireHeader.version, 0x30, 0, 0]], .truncated),
        ([[0x46, 0x4B, WireHeader.version, 0x32, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0x61]], .truncated),
        ([[0x46, 0x4B, WireHeader.version, 0x32, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xFF, 0xFE]], .malformed),
        ([[0x46, 0x4B, WireHeader.version, 0x36, 0, 0, 0, 0, 0, 0, 0, 1], [1]], .wrongFrameCount),
        ([[0x46, 0x4B, WireHeader.version, 0x36, 0, 0, 0, 0, 0, 0, 0, 1, 5]], .malformed),
    ])
    func badClientRequestsAreRefusedWithTheirReason(frames: [[UInt8]], code: ProtocolError.Code) {
        #expect {
            try ClientRequest(frames: frames)
        } throws: { error in
            (error as? ProtocolError)?.code == code
        }
    }

    /// A node's digests travel in binary, a frame of their own, and are read from it as 16 bytes
    /// each; the JSON's are read too, into the same list, and one that is not 32 hex digits is
    /// malformed.
    @Test func nodeReportsCarryTheirDigestsInBinaryAndReadThemFromEither() throws {
        let hex = String(repeating: "0f", count: 16)
        let digest = try #require(StateDigest(hex: hex))
        var report = NodeReport(
            name: "node-1", digest: hex, digests: [:], instances: 2, runningEffects: 0, effectsLost: 0, pendingSubmissions: 0,
            connected: true, digestSeq: 9
        )
        let digests = [ReportedDigest(address: "counter/a", seq: 7, digest: digest), ReportedDigest(address: "kv/ü", seq: 9, digest: digest)]
        let message = NodeReportMessage(node: 1, applied: 9, time: 5, report: report, digests: digests)
        let frames = message.frames
        #expect(frames.count == 3)
        #expect(!String(decoding: frames[1], as: UTF8.self).contains("counter/a"), "the digests are not in the JSON")
        // Each: the address as a short string, the seq, the 16 bytes.
        #expect(frames[2].count == (2 + 9 + 8 + 16) + (2 + 5 + 8 + 16))
        let firstDigest: [UInt8] = Array(frames[2][19..<35])
        #expect(firstDigest == digest.bytes)
        #expect(try NodeReportMessage(frames: frames) == message)
        #expect(NodeReportMessage(node: 1, applied: 9, time: 5, report: report).frames.count == 2, "no digests, no third frame")

        // Written by another implementation: the digests in the JSON (upper case read too), or in both frames.
        func sorted(_ message: NodeReportMessage) -> [ReportedDigest] { message.digests.sorted { $0.address < $1.address } }
        report.digests = ["counter/a": InstanceDigest(seq: 7, digest: hex), "kv/ü": InstanceDigest(seq: 9, digest: hex.uppercased())]
        let inJSON = try NodeReportMessage(frames: [frames[0], JSONFrame.encode(report)])
        #expect(sorted(inJSON) == digests)
        #expect(inJSON.report.digests.isEmpty, "taken out of the JSON once read")
        report.digests = ["counter/b": InstanceDigest(seq: 1, digest: hex)]
        let both = try NodeReportMessage(frames: [frames[0], JSONFrame.encode(report), frames[2]])
        #expect(sorted(both).map(\.address) == ["counter/a", "counter/b", "kv/ü"])
        report.digests = ["counter/a": InstanceDigest(seq: 1, digest: hex)]
        #expect(throws: ProtocolError.self) { try NodeReportMessage(frames: [frames[0], JSONFrame.encode(report), frames[2]]) }
        for odd in ["ABC", String(repeating: "g", count: 32), hex + "00"] {
            report.digests = ["counter/a": InstanceDigest(seq: 1, digest: odd)]
            #expect(throws: ProtocolError.self) { try NodeReportMessage(frames: [frames[0], JSONFrame.encode(report)]) }
        }
        // The same address twice in the binary frame.
        #expect(throws: ProtocolError.self) { try NodeReportMessage(frames: [frames[0], frames[1], Array(frames[2].prefix(35)) + Array(frames[2].prefix(35))]) }

        // Cut anywhere but between the two digests (after 35 or 31 bytes, in either order).
        for cut in 1..<frames[2].count where cut != 35 && cut != 31 {
            #expect(throws: ProtocolError.self) { try NodeReportMessage(frames: [frames[0], frames[1], Array(frames[2].prefix(cut))]) }
        }
    }

    @Test func truncatedRecordsAreRefusedNotTrapped() throws {
        let frames = SubmitMessage(origin: 1, session: 1, submissions: [
            Submission(submission: 1, kind: .event, codec: .json, submittedAt: 0, address: "counter/a", payload: [1, 2, 3]),
        ]).frames
        for cut in 0..<frames[1].count {
            let truncated = [frames[0], Array(frames[1].prefix(cut))]
            #expect(throws: ProtocolError.self) { try SubmitMessage(frames: truncated) }
        }
    }

    @Test(arguments: ["counter/room-1", "kv/a/b/c", "search_2/key with spaces"])
    func validAddressesParse(text: String) throws {
        #expect(try Address(parsing: text).description == text)
    }

    @Test(arguments: ["counter", "/key", "Counter/x", "counter/", "a b/c", "counter/\u{7}bell"])
    func invalidAddressesAreRefused(text: String) {
        #expect(throws: ProtocolError.self) { try Address(parsing: text) }
    }
}
