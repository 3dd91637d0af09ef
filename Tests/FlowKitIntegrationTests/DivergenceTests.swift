import FlowKitCluster
import FlowKitProcesses
import Foundation
import Synchronization
import Testing

/// Issue 5: a divergence is never silent. `flowkit-testbed` registers a flow whose reducer reads
/// randomness ("nondeterministic"): replicas of it end with different states after the same
/// entries, and the coordinator must raise an ALARM of kind `divergence`, and `flowkit status`
/// must say so and exit 6.
extension ClusterProcessTests {
    @Test func nondeterministicReducerRaisesADivergenceAlarm() async throws {
        var options = TestCluster.Options()
        options.binary = "flowkit-testbed"
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let monitor = try await ClusterMonitor(publishEndpoint: endpoints.publish, logger: cluster.logger)
            let alarms = Mutex<[Alarm]>([])
            let statuses = Mutex(0)
            let events = monitor.events
            let reader = Task {
                for try await event in events {
                    switch event {
                    case .alarm(let alarm): alarms.withLock { $0.append(alarm) }
                    case .status: statuses.withLock { $0 += 1 }
                    default: break
                    }
                }
            }
            defer { reader.cancel() }
            // The subscription has reached the publisher before anything diverges.
            _ = try await eventually("the monitor receives the coordinator's status", timeout: .seconds(5)) {
                statuses.withLock { $0 } > 0 ? true : nil
            }

            var last: UInt64 = 0
            for round in 0..<5 {
                last = try await cluster.client(round % 3 + 1).emit(json: #"{"roll":{}}"#, to: "nondeterministic/x", wait: .applied).seq
            }
            try await cluster.waitUntilApplied(last)
            let divergence = try await eventually("an ALARM of kind divergence is published", timeout: .seconds(10), every: .milliseconds(100)) {
                alarms.withLock { $0 }.first { $0.kind == .divergence }
            }
            reader.cancel()
            await monitor.close()
            #expect(divergence.address == "nondeterministic/x")
            #expect((divergence.seq ?? 0) >= 1 && (divergence.seq ?? 0) <= last)
            #expect((divergence.digests?.count ?? 0) >= 2, "the alarm names the replicas' digests: \(divergence)")
            // Before that, each node named the flow whose reducer reads what it should not.
            let nodeLog = try #require(cluster.node(1)).process.stderrText()
            #expect(nodeLog.contains("NONDETERMINISTIC REDUCER: flow nondeterministic"), "\(nodeLog.suffix(2_000))")

            // The operator's view: `status` fails with the divergence count.
            let runner = CommandRunner(directory: cluster.directory)
            // The OS chose the ports, so publish is not submit + 1: every endpoint is given.
            let coordinatorFlags = ["--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish, "--coordinator-sync", endpoints.sync]
            let status = try await runner.run(cluster.binary, ["status"] + coordinatorFlags)
            #expect(status.exitCode == 6, "flowkit status exits 6 on a divergence: \(status)")
            let count = Self.number(after: "divergences ", in: status.stdout)
            #expect((count ?? 0) > 0, "flowkit status shows divergences > 0: \(status.stdout)")

            // The same through `monitor --json`, as a script would watch for it.
            let monitorProcess = try ChildProcess.testChild(
                executable: cluster.binary, arguments: ["monitor", "--json", "--heartbeats", "--duration", "30"] + coordinatorFlags,
                name: "monitor", directory: cluster.directory
            )
            let watching = await Result(awaiting: {
                try await monitorProcess.waitForOutput(containing: #""type":"heartbeat""#, timeout: .seconds(5))
                for round in 0..<3 {
                    _ = try await cluster.client(round + 1).emit(json: #"{"roll":{}}"#, to: "nondeterministic/y", wait: .applied)
                }
                try await monitorProcess.waitForOutput(containing: #""type":"alarm""#, timeout: .seconds(10))
            })
            let stopped = await monitorProcess.stop()
            try watching.get()
            #expect(stopped == .exited(0), "monitor exits 0 on SIGTERM: \(monitorProcess.stderrReport())")
            let watched = (stdout: monitorProcess.stdoutText, ())
            let alarmLines = watched.stdout.split(separator: "\n").filter { $0.contains(#""type":"alarm""#) && $0.contains(#""divergence""#) }
            #expect(!alarmLines.isEmpty, "flowkit monitor --json printed a divergence alarm:\n\(watched.stdout.suffix(2_000))")
        }
    }

    /// The number right after `label` in `text`.
    static func number(after label: String, in text: String) -> Int? {
        guard let range = text.range(of: label) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }
}

extension ClusterProcessTests {
    /// Reducers that read `uuid()`, `now` and random numbers, as TCA's do, in a user's own binary
    /// (flowkit-testbed, through FlowKitCLI.main(registry:)): events emitted at all three nodes
    /// leave the same state and digest on every node, with distinct UUIDs, timestamps within the
    /// second of the emit, and dice that are not all alike; no divergence.
    @Test func reducersThatReadUUIDsTimeAndDiceConvergeOnEveryNode() async throws {
        var options = TestCluster.Options()
        options.binary = "flowkit-testbed"
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let started = Date()
            var last: UInt64 = 0
            for round in 0..<9 {
                last = try await cluster.client(round % 3 + 1).emit(json: #"{"add":{"_0":"todo \#(round)"}}"#, to: "todos/list").seq
                last = max(last, try await cluster.client(round % 3 + 1).emit(json: #"{"roll":{}}"#, to: "dice/table").seq)
            }
            let finished = Date()
            try await cluster.waitUntilApplied(last)
            for address in ["todos/list", "dice/table"] {
                let states = try await cluster.states(of: address, minApplied: last)
                #expect(states.count == 3 && Set(states.values.map(\.digest)).count == 1, "\(address): \(states.mapValues(\.digest))")
            }
            let todos = try #require(try await cluster.states(of: "todos/list", minApplied: last)[1])
            let decoder = JSONDecoder()
            let list = try decoder.decode(TodosState.self, from: Data(todos.json)).todos
            #expect(list.count == 9 && Set(list.map(\.id)).count == 9, "distinct UUIDs: \(list.map(\.id))")
            #expect(list.allSatisfy { $0.createdAt >= started.addingTimeInterval(-1) && $0.createdAt <= finished.addingTimeInterval(1) }, "\(list.map(\.createdAt))")
            let dice = try decoder.decode(DiceState.self, from: Data(try #require(try await cluster.states(of: "dice/table", minApplied: last)[2]).json))
            #expect(dice.rolls.count == 9 && Set(dice.rolls).count > 1 && dice.rolls.allSatisfy { (1...6).contains($0) }, "\(dice.rolls)")
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let status = try await CommandRunner(directory: cluster.directory).run(
                cluster.binary, ["status", "--coordinator", endpoints.submit, "--coordinator-publish", endpoints.publish, "--coordinator-sync", endpoints.sync]
            )
            #expect(status.exitCode == 0, "no divergence, every node at the head: \(status)")
        }
    }

    struct TodosState: Decodable {
        struct Todo: Decodable { var id: UUID; var createdAt: Date }
        var todos: [Todo]
    }

    struct DiceState: Decodable { var rolls: [Int] }
}
