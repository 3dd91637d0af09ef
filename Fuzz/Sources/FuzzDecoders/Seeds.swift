import FlowKitCore
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Foundation

/// Valid messages of every kind, as the seed corpus: libFuzzer mutates from real messages, so it
/// gets past the header checks at once.
enum Seeds {
    static func messages() -> [String: [[UInt8]]] {
        let entry = Entry(
            seq: 7, epoch: 1, kind: .event, codec: .json, origin: 2, session: 99, submission: 5, submittedAt: 1_700_000_000_000_000,
            committedAt: 1_700_000_000_000_100, address: "counter/room-1", payload: Array(#"{"increment":{}}"#.utf8)
        )
        let cancel = Entry(
            seq: 8, epoch: 1, kind: .cancel, codec: .json, origin: 2, session: 99, submission: 6, submittedAt: 1, committedAt: 2,
            address: "timer/kitchen", payload: Array("timer".utf8)
        )
        let submission = Submission(submission: 1, kind: .event, codec: .json, submittedAt: 1, address: "counter/a", payload: Array(#"{"add":{"_0":5}}"#.utf8))
        let info = NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:7411", flows: ["counter", "ledger"], pid: 42)
        let report = NodeReport(
            name: "node-1", digest: String(repeating: "ab", count: 16), digests: ["counter/a": InstanceDigest(seq: 42, digest: String(repeating: "cd", count: 16))],
            instances: 3, runningEffects: 1, effectsLost: 0, pendingSubmissions: 0, connected: true
        )
        let status = ClusterStatus(
            epoch: 1, head: 1042, firstSeq: 1, entriesPerSecond: 950.5,
            nodes: [.init(id: 1, name: "node-1", clientEndpoint: "tcp://127.0.0.1:7411", applied: 1042, lag: 0, alive: true, lastSeenMillis: 230, digest: "ab", instances: 12, runningEffects: 1, pendingSubmissions: 0)],
            divergences: 0
        )
        return [
            "ClientRequest-emit": ClientRequest.emit(request: 1, wait: .applied, codec: .json, address: "counter/room-1", payload: Array(#"{"increment":{}}"#.utf8)).frames,
            "ClientRequest-query": ClientRequest.query(request: 2, minApplied: 7, address: "counter/room-1").frames,
            "ClientRequest-cancel": ClientRequest.cancel(request: 3, wait: .ordered, address: "timer/kitchen", id: "timer").frames,
            "ClientRequest-status": ClientRequest.status(request: 4).frames,
            "ClientRequest-watch": ClientRequest.watch(request: 5, seconds: 10).frames,
            "ClientReply-emitted": ClientReply.emitted(request: 1, seq: 7, epoch: 1, applied: true).frames,
            "ClientReply-state": ClientReply.state(request: 2, applied: 7, lastSeq: 7, digest: [UInt8](repeating: 0xAB, count: 16), state: Array(#"{"count":1}"#.utf8)).frames,
            "ClientReply-error": ClientReply.error(request: 3, ProtocolError(.unknownFlow, "no flow")).frames,
            "SubmitMessage": SubmitMessage(origin: 1, session: 99, submissions: [submission, submission]).frames,
            "AckMessage": AckMessage(epoch: 1, head: 9, acks: [.init(submission: 1, seq: 9, status: .ordered), .init(submission: 2, seq: 0, status: .refused, reason: .overloaded)]).frames,
            "HelloMessage": HelloMessage(node: 1, session: 99, info: info).frames,
            "WelcomeMessage": WelcomeMessage(epoch: 1, head: 9, info: CoordinatorInfo(firstSeq: 1, dedupWindow: 65_536)).frames,
            "NodeReportMessage": NodeReportMessage(node: 1, applied: 42, time: 1, report: report).frames,
            "EntriesMessage": EntriesMessage(address: "#", epoch: 1, entries: [entry, cancel]).frames,
            "HeartbeatMessage": HeartbeatMessage(epoch: 1, head: 42, time: 1).frames,
            "ClusterStatusMessage": ClusterStatusMessage(status: status).frames,
            "AlarmMessage": AlarmMessage(alarm: Alarm(kind: .divergence, message: "diverged", address: "counter/a", seq: 42, digests: ["node-1": "ab", "node-2": "cd"])).frames,
            "SyncRequest-range": RangeRequest(request: 1, from: 5, to: 6, maxCount: 10_000).frames,
            "SyncRequest-snapshot": SnapshotRequest(request: 2).frames,
            "SyncRequest-snapshot-sessions": SnapshotRequest(request: 2, withSessions: true).frames,
            "SyncRequest-fetch": FetchRequest(request: 3, epoch: 2, durable: 8, end: 9, endEpoch: 1, maxBytes: 1 << 20, id: "c2").frames,
            "FetchedMessage": FetchedMessage(request: 3, epoch: 2, committed: 8, records: [entry.encoded, cancel.encoded]).frames,
            "FetchedMessage-cut": FetchedMessage(request: 4, epoch: 2, committed: 8, keep: 7, records: []).frames,
            "NotLeaderMessage": NotLeaderMessage(epoch: 2, id: "c1", endpoints: CoordinatorEndpoints(submit: "tcp://127.0.0.1:7400", publish: "tcp://127.0.0.1:7401", sync: "tcp://127.0.0.1:7402")).frames,
            "RangeMessage": RangeMessage(request: 1, epoch: 1, head: 8, entries: [entry, cancel]).frames,
            "SnapshotChunkMessage": SnapshotChunkMessage(request: 2, seq: 8, epoch: 1, chunk: 0, isLast: true, instances: [.init(address: "counter/a", lastSeq: 7, state: Array(#"{"count":3}"#.utf8))]).frames,
            "ErrorReply": ErrorReply(request: 1, error: ProtocolError(.truncated, "the header is truncated")).frames,
            "Entry": [entry.encoded],
            "Address": [Array("counter/room-1".utf8)],
            "LoadFlow.Event": [LoadFlow.sampleEvents.first.map { $0.binaryEncoded() } ?? []],
            "event JSON": [Array(#"{"record":{"_0":"order-1"}}"#.utf8)],
        ]
    }

    /// Writes every seed under the decoder it belongs to.
    static func write(to directory: String) {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let names = Decoders.all.map(\.name)
        for (name, frames) in messages() {
            let base = String(name.split(separator: "-").first ?? "")
            guard let decoder = names.firstIndex(where: { $0 == base || $0.hasPrefix(base + " ") }) else {
                fatalError("no decoder for seed \(name)")
            }
            let bytes = FuzzInput.encode(decoder: decoder, frames: frames)
            _ = FileManager.default.createFile(atPath: "\(directory)/seed-\(name)", contents: Data(bytes))
        }
    }
}
