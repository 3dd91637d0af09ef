@_spi(Wire) import FlowKitCluster
import FlowKitCommands
import Foundation
import ZeroMQ

/// Sends every ``WallCase`` to both walls, a node's client socket and the coordinator's submit
/// socket, and checks that they decide alike: the coordinator is the last wall before the log and
/// must never admit what a node refuses, nor refuse what a node admits.
struct WallAgreement: Sendable {
    /// What a wall made of a case.
    enum Decision: Sendable, Equatable, Codable, CustomStringConvertible {
        case admitted
        case refused(String)
        /// The node admitted it, and the coordinator then refused what the node submitted.
        case refusedBehind(String)
        /// No decision: overloaded, unreachable, no answer in time.
        case inconclusive(String)

        var description: String {
            switch self {
            case .admitted: "admitted"
            case .refused(let reason): "refused (\(reason))"
            case .refusedBehind(let reason): "admitted, then refused by the coordinator (\(reason))"
            case .inconclusive(let why): "no decision (\(why))"
            }
        }
    }

    /// What the run found.
    struct Result: Sendable, Codable {
        var cases = 0
        /// Cases a client request can carry, decided by both walls.
        var comparedAtBothWalls = 0
        /// Cases only a SUBMIT can carry: the coordinator must refuse each.
        var coordinatorOnly = 0
        var admitted = 0
        var refusedByReason: [String: Int] = [:]
        var inconclusive = 0
        /// The cases where the walls disagreed, or the coordinator admitted what no node sends.
        var disagreements: [String] = []
        var seconds: Double = 0
        var error: String?
    }

    let nodeEndpoint: String
    let submitEndpoint: String
    let cases: [WallCase]
    let session: UInt64

    func run() async -> Result {
        await onDedicatedThread(named: "fuzz-walls") { self.runBlocking() }
    }

    private func runBlocking() -> Result {
        var result = Result()
        let started = ContinuousClock.now
        do {
            let context = try ZMQContext()
            defer { context.shutdown() }
            let node = try socket(context, nodeEndpoint)
            let coordinator = try socket(context, submitEndpoint)
            defer {
                node.close(linger: .zero)
                coordinator.close(linger: .zero)
            }
            Thread.sleep(forTimeInterval: 0.2)
            // The coordinator takes a SUBMIT only from the connection that said HELLO as its
            // origin: the cases reach its admission rule as a node's would.
            let info = NodeInfo(name: "wall-\(WallCase.origin)", clientEndpoint: "tcp://127.0.0.1:1", flows: [], pid: 1)
            try coordinator.send(Message(parts: HelloMessage(node: WallCase.origin, session: session, info: info).frames))
            guard try answer(on: coordinator, within: .seconds(15), matches: { (try? WelcomeMessage(frames: $0)) != nil }) != nil else {
                throw ChaosError("the coordinator did not answer the wall check's HELLO")
            }
            for (index, wallCase) in cases.enumerated() {
                let id = UInt64(index + 1)
                result.cases += 1
                let atCoordinator = try decideAtTheCoordinator(wallCase, submission: id, socket: coordinator)
                if wallCase.reachesTheNode {
                    result.comparedAtBothWalls += 1
                    let atNode = try decideAtTheNode(wallCase, request: id, socket: node)
                    tally(atNode, atCoordinator, wallCase, into: &result)
                } else {
                    result.coordinatorOnly += 1
                    if atCoordinator == .admitted {
                        result.disagreements.append("\(describe(wallCase)): no node sends this, and the coordinator admitted it")
                    }
                    tally(atCoordinator, atCoordinator, wallCase, into: &result)
                }
            }
        } catch {
            result.error = "\(error)"
        }
        result.seconds = (ContinuousClock.now - started).inSeconds
        return result
    }

    private func tally(_ atNode: Decision, _ atCoordinator: Decision, _ wallCase: WallCase, into result: inout Result) {
        switch (atNode, atCoordinator) {
        case (.inconclusive, _), (_, .inconclusive):
            result.inconclusive += 1
        case (.admitted, .admitted):
            result.admitted += 1
        case (.refused(let node), .refused(let coordinator)) where node == coordinator:
            result.refusedByReason[node, default: 0] += 1
        default:
            result.disagreements.append("\(describe(wallCase)): the node \(atNode), the coordinator \(atCoordinator)")
        }
    }

    private func describe(_ wallCase: WallCase) -> String {
        let address = String(decoding: wallCase.address.prefix(40), as: UTF8.self)
        return "\(wallCase.name) (kind \(wallCase.kind), codec \(wallCase.codec), \(address), \(wallCase.payload.count) bytes)"
    }

    private func socket(_ context: ZMQContext, _ endpoint: String) throws -> Socket {
        let socket = try Socket(context: context, type: .dealer)
        try socket.setOption(.maxMessageSize, Int64(-1))
        try socket.setOption(.linger, Duration.zero)
        try socket.setOption(.receiveTimeout, Duration.milliseconds(100))
        try socket.connect(endpoint)
        return socket
    }

    /// The answer to the message just sent; later answers to earlier ones are skipped by `matches`.
    private func answer(on socket: Socket, within limit: Duration, matches: ([[UInt8]]) -> Bool) throws -> [[UInt8]]? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard let message = try socket.receive() else { continue }
            let frames = message.frames.map(\.bytes)
            if matches(frames) { return frames }
        }
        return nil
    }

    private func decideAtTheNode(_ wallCase: WallCase, request: UInt64, socket: Socket) throws -> Decision {
        try socket.send(Message(parts: wallCase.nodeFrames(request: request)))
        guard let frames = try answer(on: socket, within: .seconds(15), matches: { (try? ClientReply(frames: $0))?.request == request }),
            let reply = try? ClientReply(frames: frames)
        else { return .inconclusive("no answer") }
        switch reply {
        case .emitted:
            return .admitted
        case .error(_, let error):
            if error.code == .overloaded || error.code == .coordinatorUnavailable { return .inconclusive(error.code.metricLabel) }
            return error.message.hasPrefix("the coordinator refused") ? .refusedBehind(error.code.metricLabel) : .refused(error.code.metricLabel)
        default:
            return .inconclusive("unexpected answer")
        }
    }

    private func decideAtTheCoordinator(_ wallCase: WallCase, submission: UInt64, socket: Socket) throws -> Decision {
        try socket.send(Message(parts: wallCase.submitFrames(session: session, submission: submission)))
        // An ERROR names request 0 (the SUBMIT could not be read), an ACK the submission.
        guard let frames = try answer(on: socket, within: .seconds(15), matches: { frames in
            if let ack = try? AckMessage(frames: frames) { return ack.acks.contains { $0.submission == submission || wallCase.submissionZero } }
            return (try? ErrorReply(frames: frames)) != nil
        }) else { return .inconclusive("no answer") }
        if let error = try? ErrorReply(frames: frames) { return .refused(error.error.code.metricLabel) }
        guard let ack = try? AckMessage(frames: frames), let item = ack.acks.first(where: { $0.submission == submission }) else {
            return .inconclusive("unexpected answer")
        }
        switch item.status {
        case .ordered, .duplicate:
            return .admitted
        case .refused:
            let reason = item.reason ?? .internalError
            if reason == .overloaded || reason == .internalError { return .inconclusive(reason.metricLabel) }
            return .refused(reason.metricLabel)
        }
    }
}
