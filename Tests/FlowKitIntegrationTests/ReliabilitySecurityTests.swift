#if canImport(Glibc)
import Glibc
#endif
@_spi(Wire) import FlowKitCluster
import FlowKitProcesses
import Foundation
import Logging
import Testing
import ZeroMQ

extension ReliabilityTests {
    /// `flowkit keys` writes secret keys readable by their owner only.
    @Test func keysAreWrittenOwnerOnly() async throws {
        let directory = try Reliability.temporaryDirectory("keys")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try await Reliability.flowkit(["keys", "--name", "node-1", "--dir", directory], timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        var info = stat()
        #expect(stat("\(directory)/node-1.key", &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "node-1.key has mode \(String(info.st_mode & 0o777, radix: 8))")
        let publicKey = try String(contentsOfFile: "\(directory)/node-1.pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(publicKey.count == 40 && result.stdout.contains(publicKey))
    }

    /// A coordinator or node refuses a secret key file its group or others can read, and says
    /// which `chmod` fixes it (docs/SECURITY.md, "Key files").
    @Test(arguments: [("coordinator", 0o644), ("coordinator", 0o640), ("node", 0o604), ("node", 0o640)])
    func processesRefuseReadableSecretKeys(process: String, mode: Int) async throws {
        let keys = try Reliability.temporaryDirectory("badkey")
        defer { try? FileManager.default.removeItem(atPath: keys) }
        _ = try await Reliability.flowkit(["keys", "--name", "server", "--dir", keys], timeout: .seconds(30))
        _ = try await Reliability.flowkit(["keys", "--name", "client", "--dir", keys], timeout: .seconds(30))
        try FileManager.default.copyItem(atPath: "\(keys)/client.pub", toPath: "\(keys)/authorized")
        chmod("\(keys)/server.key", mode_t(mode))
        let curve = ["--curve-secret", "\(keys)/server.key", "--curve-allow", "\(keys)/authorized"]
        let arguments = process == "coordinator"
            ? ["coordinator", "--submit", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--sync", "tcp://127.0.0.1:*", "--curve-allow-nodes", "\(keys)/authorized"] + curve
            : ["node", "--id", "1", "--coordinator", "tcp://127.0.0.1:1", "--client", "tcp://127.0.0.1:*", "--coordinator-key", "\(keys)/server.pub"] + curve
        let result = try await Reliability.flowkit(arguments, timeout: .seconds(30))
        #expect(result.status != 0, "\(process) started with a secret key of mode \(String(mode, radix: 8))")
        #expect(!result.stdout.contains("READY"))
        #expect(result.stderr.contains("can be read by other users"), "\(result.stderr)")
        #expect(result.stderr.contains("chmod 600 \(keys)/server.key"), "\(result.stderr)")
    }

    /// A coordinator with CURVE needs the node keys apart (`--curve-allow-nodes`): without them it
    /// does not start, and says why.
    @Test func aCoordinatorWithCurveNeedsTheNodeKeys() async throws {
        let keys = try Reliability.temporaryDirectory("nodekeys")
        defer { try? FileManager.default.removeItem(atPath: keys) }
        _ = try await Reliability.flowkit(["keys", "--name", "server", "--dir", keys], timeout: .seconds(30))
        try FileManager.default.copyItem(atPath: "\(keys)/server.pub", toPath: "\(keys)/authorized")
        let result = try await Reliability.flowkit(
            ["coordinator", "--submit", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--sync", "tcp://127.0.0.1:*",
             "--curve-secret", "\(keys)/server.key", "--curve-allow", "\(keys)/authorized"],
            timeout: .seconds(30)
        )
        #expect(result.status != 0 && !result.stdout.contains("READY"))
        #expect(result.stderr.contains("--curve-allow-nodes"), "\(result.stderr)")
    }

    /// With CURVE on, a client whose key is not in the allow-list, and a client without CURVE, are
    /// refused at every socket: no emit answered, no submission acknowledged, no range served, no
    /// message published to them, nothing ordered; each server's ZAP handler logs the refusals.
    @Test func strangersAreRefusedAtEverySocket() async throws {
        let cluster = try await CurveCluster.start()
        do {
            try await cluster.checkStrangersAreRefused()
        } catch {
            _ = await cluster.stop()
            throw error
        }
        let outcomes = await cluster.stop()
        #expect(outcomes.allSatisfy { $0 == .exited(0) }, "\(outcomes)")
    }
}

/// A coordinator and one node with CURVE on, started from keys `flowkit keys` wrote: the node and
/// `client` are in the allow-list, `stranger` is not.
struct CurveCluster {
    let keys: String
    let coordinator: ChildProcess
    let node: ChildProcess
    let endpoints: CoordinatorEndpoints
    let nodeEndpoint: String
    let logger: Logger

    static func start() async throws -> CurveCluster {
        let directory = try Reliability.temporaryDirectory("curve")
        let keys = "\(directory)/keys"
        for name in ["coordinator", "node-1", "client", "stranger"] {
            let result = try await Reliability.flowkit(["keys", "--name", name, "--dir", keys], timeout: .seconds(30))
            guard result.status == 0 else { throw HarnessError("flowkit keys failed: \(result.stderr)") }
        }
        let allowed = try ["node-1", "client"].map { try String(contentsOfFile: "\(keys)/\($0).pub", encoding: .utf8) }.joined()
        try ("# admitted\n" + allowed).write(toFile: "\(keys)/authorized", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: "\(keys)/node-1.pub", toPath: "\(keys)/nodes")
        let binary = try TestCluster.findBinary()
        let coordinator = try ChildProcess.testChild(
            executable: binary,
            arguments: [
                "coordinator", "--submit", "tcp://127.0.0.1:*", "--publish", "tcp://127.0.0.1:*", "--sync", "tcp://127.0.0.1:*",
                "--curve-secret", "\(keys)/coordinator.key", "--curve-allow", "\(keys)/authorized", "--curve-allow-nodes", "\(keys)/nodes",
                "--log-level", "info",
            ],
            name: "coordinator", directory: directory
        )
        let ready = try await coordinator.waitForLine(prefix: "READY ", timeout: .seconds(20))
        let fields = try JSONDecoder().decode([String: String].self, from: Data(ready.dropFirst(6).utf8))
        let endpoints = CoordinatorEndpoints(submit: fields["submit"]!, publish: fields["publish"]!, sync: fields["sync"]!)
        let node = try ChildProcess.testChild(
            executable: binary,
            arguments: [
                "node", "--id", "1", "--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish,
                "--coordinator-sync", endpoints.sync, "--client", "tcp://127.0.0.1:*", "--curve-secret", "\(keys)/node-1.key",
                "--curve-allow", "\(keys)/authorized", "--coordinator-key", "\(keys)/coordinator.pub", "--log-level", "info",
            ],
            name: "node-1", directory: directory
        )
        let nodeReady = try await node.waitForLine(prefix: "READY ", timeout: .seconds(20))
        let nodeFields = try JSONDecoder().decode([String: String].self, from: Data(nodeReady.dropFirst(6).utf8))
        var logger = Logger(label: "flowkit.reliability")
        logger.logLevel = .error
        return CurveCluster(keys: keys, coordinator: coordinator, node: node, endpoints: endpoints, nodeEndpoint: nodeFields["client"]!, logger: logger)
    }

    func stop() async -> [ChildProcess.StopOutcome] {
        let outcomes = [await node.stop(), await coordinator.stop()]
        if outcomes.allSatisfy(\.isClean) { try? FileManager.default.removeItem(atPath: (keys as NSString).deletingLastPathComponent) }
        return outcomes
    }

    func keyPair(_ name: String) throws -> CurveKeyPair {
        try CurveSecurity.load(secretKeyFile: "\(keys)/\(name).key", allowListFile: nil).keyPair
    }

    func publicKey(_ name: String) throws -> CurveKey { try CurveSecurity.publicKey("\(keys)/\(name).pub") }

    /// A node client as `name` (`nil`: plain text, no CURVE).
    func client(_ name: String?, timeout: Duration) async throws -> ClusterClient {
        var transport = TransportOptions()
        if let name { transport.curve = CurveSecurity(keyPair: try keyPair(name), allowedClients: []) }
        return try await ClusterClient(endpoint: nodeEndpoint, timeout: timeout, transport: transport, serverPublicKey: try publicKey("node-1"), logger: logger)
    }

    /// A raw socket to one of the coordinator's sockets as `name` (`nil`: plain text).
    func probe(_ type: SocketType, _ endpoint: String, as name: String?) async throws -> ProbeSocket {
        let options = try name.map { CurveClientOptions(keyPair: try keyPair($0), serverPublicKey: try publicKey("coordinator")) }
        return try await ProbeSocket(type: type, endpoint: endpoint, curve: options, logger: logger)
    }

    func checkStrangersAreRefused() async throws {
        let ledger = #"{"record":{"_0":"%@"}}"#
        let client = try await client("client", timeout: .seconds(10))
        defer { Task { await client.close() } }
        let first = try await client.emit(json: ledger.replacingOccurrences(of: "%@", with: "admitted-1"), to: "ledger/curve", wait: .applied)

        // Heartbeats reach an admitted subscriber, so silence below means refusal.
        let admitted = try await probe(.sub, endpoints.publish, as: "client")
        try await admitted.subscribe("")
        #expect(try await admitted.receive(timeout: .seconds(5)) != nil, "an admitted subscriber gets heartbeats")
        await admitted.close()

        for name in ["stranger", nil] as [String?] {
            let who = name ?? "a plain-text client"
            let stranger = try await self.client(name, timeout: .seconds(3))
            await #expect(throws: ClusterClientError.self, "\(who)'s emit at the node") {
                try await stranger.emit(json: ledger.replacingOccurrences(of: "%@", with: "stranger-emit"), to: "ledger/curve")
            }
            await stranger.close()

            let submit = try await probe(.dealer, endpoints.submit, as: name)
            let submission = Submission(submission: 1, kind: .event, codec: .json, submittedAt: 1, address: "ledger/curve", payload: Array(ledger.replacingOccurrences(of: "%@", with: "stranger-submit").utf8))
            try await submit.send(SubmitMessage(origin: 77, session: 7, submissions: [submission]).frames)
            #expect(try await submit.receive(timeout: .seconds(3)) == nil, "\(who)'s SUBMIT was answered")
            await submit.close()

            let sync = try await probe(.dealer, endpoints.sync, as: name)
            try await sync.send(RangeRequest(request: 1, from: 1, to: 100, maxCount: 100).frames)
            #expect(try await sync.receive(timeout: .seconds(3)) == nil, "\(who)'s RANGE_REQUEST was answered")
            await sync.close()

            let subscriber = try await probe(.sub, endpoints.publish, as: name)
            try await subscriber.subscribe("")
            #expect(try await subscriber.receive(timeout: .seconds(3)) == nil, "\(who) received published messages")
            await subscriber.close()
        }

        // An admitted client's key may not say HELLO as a node: the submit socket admits node keys
        // only (its ZAP domain's allow-list), so neither the HELLO nor a SUBMIT is answered.
        let clientAsNode = try await probe(.dealer, endpoints.submit, as: "client")
        await #expect(throws: HarnessError.self, "the client key's HELLO as node 1 was answered") {
            try await clientAsNode.sayHello(node: 1, session: 7, timeout: .seconds(3))
        }
        let submission = Submission(submission: 1, kind: .event, codec: .json, submittedAt: 1, address: "ledger/curve", payload: Array(ledger.replacingOccurrences(of: "%@", with: "client-submit").utf8))
        try await clientAsNode.send(SubmitMessage(origin: 1, session: 7, submissions: [submission]).frames)
        #expect(try await clientAsNode.receive(timeout: .seconds(3)) == nil, "the client key's SUBMIT was answered")
        await clientAsNode.close()

        // Nothing was ordered in between: the next admitted emit follows the first.
        let second = try await client.emit(json: ledger.replacingOccurrences(of: "%@", with: "admitted-2"), to: "ledger/curve", wait: .applied)
        #expect(second.seq == first.seq + 1, "entries were ordered between \(first.seq) and \(second.seq)")
        let state = try await client.query("ledger/curve", minApplied: second.seq)
        #expect(state.text == #"{"ids":["admitted-1","admitted-2"]}"#, "\(state.text)")

        // Each server's ZAP handler refused the stranger's key (a plain-text client fails the
        // mechanism handshake before ZAP is asked).
        let coordinatorLog = coordinator.stderrText()
        let nodeLog = node.stderrText()
        #expect(coordinatorLog.components(separatedBy: "refused a client").count - 1 >= 3, "coordinator log:\n\(coordinatorLog.suffix(3_000))")
        #expect(coordinatorLog.contains("not allowed in domain flowkit-nodes"), "coordinator log:\n\(coordinatorLog.suffix(3_000))")
        #expect(nodeLog.contains("refused a client"), "node log:\n\(nodeLog.suffix(3_000))")
    }
}

/// A bare socket, optionally a CURVE client, for probing a server with what a client library
/// would never send.
final class ProbeSocket: Sendable {
    private let context: ZMQContext
    private let loop: IOLoop
    private let socket: AsyncSocket

    init(type: SocketType, endpoint: String, curve: CurveClientOptions?, logger: Logger) async throws {
        context = try ZMQContext()
        loop = try IOLoop(context: context, name: "probe", logger: logger)
        socket = try await loop.open(type) { socket in
            try socket.setOption(.linger, .zero)
            if let curve { try socket.configureCurveClient(curve) }
            try socket.connect(endpoint)
        }
    }

    func subscribe(_ topic: String) async throws {
        try await socket.perform { try $0.subscribe(topic) }
    }

    func send(_ frames: [[UInt8]]) async throws {
        try await socket.send(Message(parts: frames))
    }

    /// The next message's frames, or `nil` if none comes within `timeout`.
    func receive(timeout: Duration) async throws -> [[UInt8]]? {
        let socket = self.socket
        return try await withThrowingTaskGroup(of: [[UInt8]]?.self) { group in
            group.addTask { try await socket.receive().frames.map(\.bytes) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    func close() async {
        await socket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
