import FlowKitCluster
import Foundation
import Synchronization
import Testing

extension MultiProcessTests {
    /// A cluster holding a million instances: populating them takes most of a minute, so these
    /// have a time limit of their own.
    @Suite("A million instances", .serialized, .countingFailures, .timeLimit(.minutes(8)))
    struct MillionInstanceTests {}
}

extension MultiProcessTests.MillionInstanceTests {
    /// How many instances: a million, or `FLOWKIT_MILLION_INSTANCES`.
    static var instances: Int { ProcessInfo.processInfo.environment["FLOWKIT_MILLION_INSTANCES"].flatMap(Int.init) ?? 1_000_000 }

    /// Issue 53: the divergence alarm keeps its power among a million instances. Three nodes each
    /// hold a million `load` instances (one event each), with no alarm while they are populated
    /// and their digests settle; then one `nondeterministic` instance diverges, and the
    /// coordinator's ALARM names it, and only it, within seconds.
    @Test func oneDivergentInstanceAmongAMillionIsFound() async throws {
        var options = TestCluster.Options()
        options.binary = "flowkit-testbed"
        let count = Self.instances
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let monitor = try await ClusterMonitor(publishEndpoint: endpoints.publish, logger: cluster.logger)
            let alarms = Mutex<[(alarm: Alarm, at: ContinuousClock.Instant)]>([])
            let statuses = Mutex(0)
            let events = monitor.events
            let reader = Task {
                for try await event in events {
                    switch event {
                    case .alarm(let alarm): alarms.withLock { $0.append((alarm, .now)) }
                    case .status: statuses.withLock { $0 += 1 }
                    default: break
                    }
                }
            }
            defer { reader.cancel() }
            _ = try await eventually("the monitor receives the coordinator's status", timeout: .seconds(5)) {
                statuses.withLock { $0 } > 0 ? true : nil
            }

            let started = ContinuousClock.now
            let head = try await Self.populate(cluster, count: count)
            try await cluster.waitUntilApplied(head, timeout: .seconds(120))
            let populated = started.duration(to: .now)
            // Every node's digests settle: each describes every instance's last entry.
            let settledStatuses: [NodeStatus] = try await eventually("every node's digests settled", timeout: .seconds(120), every: .milliseconds(250)) {
                var settled: [NodeStatus] = []
                for id in cluster.nodeIDs {
                    let status = try await cluster.client(id).status()
                    guard status.applied >= head, status.instancesUnhashed == 0 else { return nil }
                    settled.append(status)
                }
                return settled
            }
            let settledAfter = started.duration(to: .now) - populated
            #expect(settledStatuses.allSatisfy { $0.instances == count }, "\(settledStatuses.map(\.instances))")
            #expect(Set(settledStatuses.map(\.digest)).count == 1, "the nodes' combined digests agree: \(settledStatuses.map(\.digest))")
            #expect(alarms.withLock { $0 }.isEmpty, "no alarm among the populated instances: \(alarms.withLock { $0.map(\.alarm) })")

            let diverged = ContinuousClock.now
            for round in 0..<3 {
                _ = try await cluster.client(round + 1).emit(json: #"{"roll":{}}"#, to: "nondeterministic/one", wait: .applied)
            }
            let divergence = try await eventually("an ALARM of kind divergence", timeout: .seconds(60), every: .milliseconds(50)) {
                alarms.withLock { $0 }.first { $0.alarm.kind == .divergence }
            }
            let found = diverged.duration(to: divergence.at)
            print("\(count) instances: populated in \(populated), digests settled \(settledAfter) later; one divergent instance found \(found) after its first entry")
            #expect(divergence.alarm.address == "nondeterministic/one")
            let named = Set(alarms.withLock { $0 }.compactMap(\.alarm.address))
            #expect(named == ["nondeterministic/one"], "only the divergent instance is named: \(named)")
            #expect(found < .seconds(5), "found within a report interval or two: \(found)")
            reader.cancel()
            await monitor.close()
        }
    }

    /// One event to each of `load/0` … `load/<count - 1>`, through every node's client socket at
    /// once with many requests in flight; returns the highest seq ordered.
    static func populate(_ cluster: TestCluster, count: Int) async throws -> UInt64 {
        let nodes = cluster.nodeIDs
        let tick: [UInt8] = [1]
        return try await withThrowingTaskGroup(of: UInt64.self) { group in
            for (index, id) in nodes.enumerated() {
                let client = cluster.client(id)
                group.addTask {
                    try await withThrowingTaskGroup(of: UInt64.self) { inFlight in
                        var head: UInt64 = 0
                        var next = index
                        for _ in 0..<512 where next < count {
                            let key = next
                            inFlight.addTask { try await client.emit(payload: tick, codec: .binary, to: "load/\(key)").seq }
                            next += nodes.count
                        }
                        while let seq = try await inFlight.next() {
                            head = max(head, seq)
                            guard next < count else { continue }
                            let key = next
                            inFlight.addTask { try await client.emit(payload: tick, codec: .binary, to: "load/\(key)").seq }
                            next += nodes.count
                        }
                        return head
                    }
                }
            }
            var head: UInt64 = 0
            while let seq = try await group.next() { head = max(head, seq) }
            return head
        }
    }
}
