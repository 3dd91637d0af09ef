import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    @Test func exploreInMemoryCoordinatorRestart() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            var last: ClusterClient.Ordered?
            for _ in 0..<5 { last = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/m", wait: .applied) }
            try await cluster.waitUntilApplied(last!.seq)
            print("EXPLORE before: \(last!)")
            await cluster.killCoordinator()
            try await cluster.startCoordinator()
            try await Task.sleep(for: .seconds(3))
            for id in cluster.nodeIDs { print("EXPLORE status \(id): \(try await cluster.client(id).status())") }
            do {
                let next = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/m", wait: .ordered)
                print("EXPLORE after ordered: \(next)")
                let applied = try await cluster.client(2).emit(json: #"{"increment":{}}"#, to: "counter/m", wait: .applied)
                print("EXPLORE after applied: \(applied)")
            } catch {
                print("EXPLORE emit error: \(error)")
            }
            try await Task.sleep(for: .seconds(2))
            for id in cluster.nodeIDs {
                print("EXPLORE status \(id): \(try await cluster.client(id).status())")
                print("EXPLORE state \(id): \((try? await cluster.client(id).query("counter/m"))?.text ?? "-")")
            }
        }
    }

    @Test func exploreNodeRestartUnderLoad() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            for i in 0..<200 { _ = try await cluster.client(1 + i % 3).emit(json: #"{"increment":{}}"#, to: "counter/n\(i % 7)") }
            await cluster.killNode(2)
            for i in 0..<200 { _ = try await cluster.client(i % 2 == 0 ? 1 : 3).emit(json: #"{"increment":{}}"#, to: "counter/n\(i % 7)") }
            try await cluster.startNodes([2])
            var last: UInt64 = 0
            for i in 0..<200 { last = try await cluster.client(1 + i % 3).emit(json: #"{"increment":{}}"#, to: "counter/n\(i % 7)").seq }
            let statuses = try await cluster.waitUntilApplied(last)
            print("EXPLORE \(statuses)")
            for i in 0..<7 {
                let states = try await cluster.states(of: "counter/n\(i)", minApplied: last)
                print("EXPLORE n\(i): \(states.map { "\($0.key)=\($0.value.text)" })")
            }
        }
    }

    @Test func exploreTwoLargeEmits() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let big = String(repeating: "x", count: 33 << 20)
            let started = ContinuousClock.now
            async let a = cluster.client(1).emit(json: #"{"set":{"key":"a","value":"\#(big)"}}"#, to: "kv/big")
            async let b = cluster.client(1).emit(json: #"{"set":{"key":"b","value":"\#(big)"}}"#, to: "kv/big")
            var ra = "", rb = ""
            do { ra = "\(try await a)" } catch { ra = "\(error)" }
            do { rb = "\(try await b)" } catch { rb = "\(error)" }
            print("EXPLORE large: \(ra) \(rb) after \(ContinuousClock.now - started)")
            var small = ""
            do { small = "\(try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/x"))" } catch { small = "\(error)" }
            print("EXPLORE small after: \(small)")
            for id in cluster.nodeIDs { print("EXPLORE status \(id): \(try await cluster.client(id).status())") }
        }
    }
}

