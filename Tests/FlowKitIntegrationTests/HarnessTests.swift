#if canImport(Glibc)
import Glibc
#endif
import FlowKitCluster
import FlowKitProcesses
import Foundation
import Synchronization
import Testing

extension ClusterProcessTests {
    /// The harness's last line of defence: when the test process itself is killed (`kill -9`, a
    /// crash), the kernel kills its `flowkit` children (parent-death signal).
    @Test func childrenDieWhenTheTestProcessIsKilled() async throws {
        let record = "\(NSTemporaryDirectory())/flowkit-it-orphans-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: record) }
        await #expect(processExitsWith: .signal(SIGKILL)) { [record = record as String] in
            let cluster = try await TestCluster.start(nodes: 1)
            let pids = [cluster.coordinatorProcess?.pid, cluster.node(1)?.process.pid].compactMap { $0 }
            let line = ([cluster.directory] + pids.map { "\($0)" }).joined(separator: "\n")
            try line.write(toFile: record, atomically: true, encoding: .utf8)
            kill(getpid(), SIGKILL)
        }
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "the exit test recorded its cluster: \(lines)")
        defer { try? FileManager.default.removeItem(atPath: lines[0]) }
        for pid in lines.dropFirst().compactMap(Int32.init) {
            _ = try await eventually("flowkit pid \(pid) is gone", timeout: .seconds(5)) {
                Self.isGoneOrDead(pid) ? true : nil
            }
        }
    }

    /// Both processes shut down gracefully on SIGINT too (SIGTERM is checked at the end of every test).
    @Test func processesStopGracefullyOnSIGINT() async throws {
        let spawned = SpawnedGroups()
        let cluster = try await SpawnedGroups.$current.withValue(spawned) { try await TestCluster.start(nodes: 1) }
        let node = try #require(cluster.node(1)?.process)
        let coordinator = try #require(cluster.coordinatorProcess)
        _ = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/a", wait: .applied)
        node.signal(SIGINT)
        let nodeExited = await node.waitForExit(timeout: .seconds(5))
        coordinator.signal(SIGINT)
        let coordinatorExited = await coordinator.waitForExit(timeout: .seconds(5))
        await cluster.shutDown()
        #expect(nodeExited && node.status == 0, "node: \(node.status.map(ChildProcess.describe) ?? "still running")")
        #expect(coordinatorExited && coordinator.status == 0, "coordinator: \(coordinator.status.map(ChildProcess.describe) ?? "still running")")
        #expect(spawned.leftovers.isEmpty)
        try? FileManager.default.removeItem(atPath: cluster.directory)
    }

    /// The leftover check finds a process the test started and left running, and nothing else:
    /// a process started outside the test's scope (another suite's, running beside it) is not
    /// its business. A deliberate leak, kept as a test of the harness.
    @Test func theLeftoverCheckFindsWhatTheTestLeftAndOnlyThat() async throws {
        let directory = try ClusterCommandProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let otherSuites = try ChildProcess.testChild(executable: "/bin/sleep", arguments: ["60"], name: "other-suite", directory: directory)
        let leaked = Mutex<ChildProcess?>(nil)
        try await withKnownIssue {
            try await TestCluster.run(nodes: 1) { _ in
                let process = try ChildProcess.testChild(executable: "/bin/sleep", arguments: ["60"], name: "leaked", directory: directory)
                leaked.withLock { $0 = process }
            }
        } matching: { issue in
            let leak = leaked.withLock { $0 }
            return issue.description.contains("left behind") && leak.map { issue.description.contains("\($0.pid) ") } == true
                && !issue.description.contains("\(otherSuites.pid) ")
        }
        if let leak = leaked.withLock({ $0 }) { _ = await leak.stop(grace: .seconds(1)) }
        _ = await otherSuites.stop(grace: .seconds(1))
    }

    /// Whether `pid` no longer runs `flowkit`: gone, a zombie, or reused by another program.
    static func isGoneOrDead(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return true }
        let command = stat[stat.index(after: open)..<close]
        let state = stat[stat.index(after: close)...].split(separator: " ").first ?? ""
        return !command.hasPrefix("flowkit") || state == "Z" || state == "X"
    }
}

extension ClusterProcessTests {
    /// The tests' WebSocket client keeps the frames a server sends right behind its 101 response,
    /// in the same TCP segment (SwiftNIO's upgrade drops them unless told otherwise). The
    /// dashboard's `/live` does exactly that with its first message, which was lost now and then.
    @Test func theWebSocketClientKeepsWhatCameWithTheUpgrade() async throws {
        let directory = try ClusterCommandProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = """
            import base64, hashlib, socket
            listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)
            print(listener.getsockname()[1], flush=True)
            peer, _ = listener.accept()
            request = b""
            while b"\\r\\n\\r\\n" not in request: request += peer.recv(4096)
            key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\\r\\n") if line.lower().startswith(b"sec-websocket-key:"))
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            peer.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: "
                + accept + b"\\r\\n\\r\\n" + b"\\x81\\x05first" + b"\\x81\\x06second")
            peer.recv(4096)
            """
        let process = try ChildProcess.testChild(executable: "/usr/bin/python3", arguments: ["-c", server], name: "one-shot-websocket", directory: directory)
        defer { Task { await process.kill9() } }  // killed and reaped, not left a zombie
        let port = try await eventually("the server's port", timeout: .seconds(10), every: .milliseconds(50)) {
            process.stdoutText.split(separator: "\n").first.flatMap { Int($0) }
        }
        let messages = try await TestWebSocket.connect("ws://127.0.0.1:\(port)/") { socket in
            [try await socket.receiveText(), try await socket.receiveText()]
        }
        #expect(messages == ["first", "second"])
    }
}
