@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import Foundation
import Testing

/// A node is who its connection says it is (docs/SECURITY.md, "Node identity"): raw frames on
/// the coordinator's submit socket, from a connection that is not the node's.
extension ClusterProcessTests {
    @Test func aConnectionSpeaksOnlyForTheNodeItSaidHelloAs() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let endpoints = try #require(cluster.coordinatorEndpoints)
            let increment = Array(#"{"increment":{}}"#.utf8)
            let first = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/identity", wait: .applied)
            // node-1's running process, as its entry names it: the session a forger would take.
            let sync = try await RawDealer(endpoint: endpoints.sync, logger: cluster.logger)
            try await sync.send(RangeRequest(request: 1, from: first.seq, to: first.seq, maxCount: 1).frames)
            let range = try #require(try await sync.receive(timeout: .seconds(10)))
            let own = try #require(try RangeMessage(frames: range).entries.first)
            #expect(own.origin == 1 && own.submission == 1)

            // Submission ids node-1 has not used yet: ordered as a forger's, node-1's own would
            // then be dropped as duplicates of them.
            func forged(_ ids: ClosedRange<UInt64>) -> [[UInt8]] {
                let payload = Array(#"{"add":{"_0":1000}}"#.utf8)
                let submissions = ids.map {
                    Submission(submission: $0, kind: .event, codec: .json, submittedAt: 1, address: "counter/identity", payload: payload)
                }
                return SubmitMessage(origin: own.origin, session: own.session, submissions: submissions).frames
            }
            let forger = try await RawDealer(endpoint: endpoints.submit, logger: cluster.logger)
            defer { Task { await forger.close(); await sync.close() } }
            try await forger.send(forged(2...4))
            let unknownReply = try #require(try await forger.receive(timeout: .seconds(10)))
            let unknown = try AckMessage(frames: unknownReply)
            #expect(unknown.acks.map(\.reason) == [.helloFirst, .helloFirst, .helloFirst], "a connection that said no HELLO: \(unknown.acks)")

            try await forger.sayHello(node: 77, session: 5)
            try await forger.send(forged(2...4))
            let forbiddenReply = try #require(try await forger.receive(timeout: .seconds(10)))
            let forbidden = try AckMessage(frames: forbiddenReply)
            #expect(forbidden.acks.map(\.status) == [.refused, .refused, .refused])
            #expect(forbidden.acks.map(\.reason) == [.forbidden, .forbidden, .forbidden], "\(forbidden.acks)")
            let report = NodeReport(
                name: "node-1", digest: String(repeating: "00", count: 16), digests: [:], instances: 0, runningEffects: 0, effectsLost: 0,
                pendingSubmissions: 0, connected: true
            )
            try await forger.send(NodeReportMessage(node: 1, applied: 0, time: 1, report: report).frames)
            let reportReply = try #require(try await forger.receive(timeout: .seconds(10)))
            let refusedReport = try ErrorReply(frames: reportReply)
            #expect(refusedReport.error.code == .forbidden, "\(refusedReport.error)")

            // node-1 goes on as before: its next submissions (ids 2…4) are its own, ordered next.
            var seqs = [first.seq]
            for _ in 2...4 { seqs.append(try await cluster.client(1).emit(payload: increment, codec: .json, to: "counter/identity", wait: .applied).seq) }
            #expect(seqs == Array(first.seq...first.seq + 3), "something was ordered between node-1's emits: \(seqs)")
            let state = try await cluster.client(2).query("counter/identity", minApplied: seqs.last!)
            #expect(try state.decode(CounterFlow.State.self).count == 4)
            let log = cluster.coordinatorProcess?.stderrText() ?? ""
            #expect(log.contains("forbidden") && log.contains("hello_first"), "\(log.suffix(2_000))")
        }
    }
}
