@_spi(Wire) import FlowKitCluster
import Foundation
import ZeroMQ

/// A socket `flowkit fuzz` attacks, and how.
enum FuzzTarget: String, CaseIterable, Codable, Sendable, Comparable {
    /// A node's client ROUTER, from a DEALER (many requests in flight).
    case nodeDealer = "node-client/dealer"
    /// A node's client ROUTER, from REQ sockets (one request at a time each).
    case nodeReq = "node-client/req"
    /// The coordinator's submit ROUTER, as a node would talk to it (DEALER).
    case coordinatorSubmit = "coordinator-submit"
    /// The coordinator's sync ROUTER (DEALER).
    case coordinatorSync = "coordinator-sync"
    /// The coordinator's publish XPUB, from an XSUB peer sending subscription frames and garbage.
    case coordinatorPublish = "coordinator-publish"

    var socketType: SocketType {
        switch self {
        case .nodeDealer, .coordinatorSubmit, .coordinatorSync: .dealer
        case .nodeReq: .req
        case .coordinatorPublish: .xsub
        }
    }

    /// Whether the receiver answers refusals (ERROR), so replies can be compared with its metrics.
    var answers: Bool { self != .coordinatorPublish }

    /// The process whose metrics count this target's refusals.
    var process: String {
        switch self {
        case .nodeDealer: "node-1"
        case .nodeReq: "node-2"
        case .coordinatorSubmit, .coordinatorSync, .coordinatorPublish: "coordinator"
        }
    }

    static func < (lhs: FuzzTarget, rhs: FuzzTarget) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    static func parseList(_ text: String) throws -> [FuzzTarget] {
        if text == "all" { return allCases }
        return try text.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let target = FuzzTarget(rawValue: name) else {
                throw ChaosError("unknown fuzz target \(name); the targets are \(allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return target
        }
    }
}

/// Valid messages for each target, the seeds the mutations start from, with weights: messages
/// that cost the receiver a lot when valid (a snapshot) are rare.
enum FuzzTemplates {
    struct Template: Sendable {
        var name: String
        var frames: [[UInt8]]
        var weight: Int
    }

    /// The HELLO of the node the coordinator's templates speak as (900, session 77).
    static let hello = HelloMessage(node: 900, session: 77, info: NodeInfo(name: "fuzz-900", clientEndpoint: "tcp://127.0.0.1:1", flows: ["counter"], pid: 1))

    static func templates(for target: FuzzTarget, head: UInt64) -> [Template] {
        switch target {
        case .nodeDealer, .nodeReq:
            // WATCH streams PROGRESS pushes: nonsense on REQ (one request, one answer), whose
            // socket would take a push for the answer and drop the answer. DEALER only.
            let watch = Template(name: "WATCH", frames: ClientRequest.watch(request: 6, seconds: 1).frames, weight: target == .nodeDealer ? 2 : 0)
            return [
                Template(name: "EMIT", frames: ClientRequest.emit(request: 1, wait: .ordered, codec: .json, address: "counter/fz-1", payload: Array(#"{"increment":{}}"#.utf8)).frames, weight: 30),
                Template(name: "EMIT kv", frames: ClientRequest.emit(request: 2, wait: .applied, codec: .json, address: "kv/fz", payload: Array(#"{"set":{"key":"k","value":"v"}}"#.utf8)).frames, weight: 15),
                Template(name: "QUERY", frames: ClientRequest.query(request: 3, minApplied: 0, address: "counter/fz-1").frames, weight: 15),
                Template(name: "CANCEL", frames: ClientRequest.cancel(request: 4, wait: .ordered, address: "timer/fz", id: "timer").frames, weight: 10),
                Template(name: "STATUS", frames: ClientRequest.status(request: 5).frames, weight: 10),
                watch,
            ]
        case .coordinatorSubmit:
            let submissions = (1...3).map {
                Submission(submission: UInt64($0), kind: .event, codec: .json, submittedAt: 1, address: "counter/fz-\($0)", payload: Array(#"{"increment":{}}"#.utf8))
            }
            let report = NodeReport(name: "fuzz-900", digest: "00", digests: [:], instances: 0, runningEffects: 0, effectsLost: 0, pendingSubmissions: 0, connected: true)
            return [
                Template(name: "SUBMIT", frames: SubmitMessage(origin: 900, session: 77, submissions: submissions).frames, weight: 40),
                Template(name: "HELLO", frames: hello.frames, weight: 15),
                Template(name: "NODE_REPORT", frames: NodeReportMessage(node: 900, applied: 0, time: 1, report: report).frames, weight: 15),
            ]
        case .coordinatorSync:
            return [
                Template(name: "RANGE_REQUEST beyond the head", frames: RangeRequest(request: 1, from: head + 1_000_000, to: head + 2_000_000, maxCount: 1).frames, weight: 60),
                Template(name: "RANGE_REQUEST one entry", frames: RangeRequest(request: 2, from: 1, to: 1, maxCount: 1).frames, weight: 10),
                Template(name: "SNAPSHOT_REQUEST", frames: SnapshotRequest(request: 3).frames, weight: 1),
            ]
        case .coordinatorPublish:
            return [
                Template(name: "subscribe", frames: [[1] + Array("counter/fz".utf8)], weight: 30),
                Template(name: "unsubscribe", frames: [[0] + Array("counter/fz".utf8)], weight: 30),
                Template(name: "subscribe control", frames: [[1] + Array("$status".utf8)], weight: 5),
            ]
        }
    }
}
