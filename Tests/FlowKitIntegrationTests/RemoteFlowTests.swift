import FlowKit
import FlowKitCluster
import FlowKitExamples
import Foundation
import Logging
import Synchronization
import Testing

/// A replicated instance held as a typed actor by a program that is not a node (`RemoteFlow`),
/// against a real coordinator and nodes.
extension ClusterProcessTests {
    @Test func twoHandlesOnDifferentNodesSeeTheSameSequenceOfStates() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            let one = try await cluster.client(1).flow(CounterFlow.self, "room-1")
            let two = try await cluster.client(2).flow(CounterFlow.self, "room-1")
            let heardByOne = Mutex<[Int]>([])
            let heardByTwo = Mutex<[Int]>([])
            await one.subscribe { state in heardByOne.withLock { $0.append(state.count) } }
            await two.subscribe { state in heardByTwo.withLock { $0.append(state.count) } }

            // Emits through both, interleaved; each returns once its handle has applied the event.
            var last: UInt64 = 0
            for round in 1...10 {
                let handle = round.isMultiple(of: 2) ? two : one
                last = try await handle.emit(round == 5 ? .add(10) : .increment, wait: .applied).seq
            }
            await one.emit(.decrement)  // StatefulFlowProviding's emit: returns once applied here
            #expect(await one.state.count == 18)
            try await two.waitUntilApplied(last + 1)

            let expected = [1, 2, 3, 4, 14, 15, 16, 17, 18, 19, 18]
            #expect(heardByOne.withLock { $0 } == expected)
            #expect(heardByTwo.withLock { $0 } == expected)
            #expect(await two.state == CounterFlow.State(count: 18))
            #expect(await one.lastSeq == two.lastSeq)
            // And the nodes agree with the handles.
            for (_, state) in try await cluster.states(of: "counter/room-1", minApplied: last + 1) {
                #expect(String(decoding: state.json, as: UTF8.self) == #"{"count":18}"#)
            }
            await one.close()
            await two.close()
        }
    }

    @Test func aLateSubscriberSeesTheCurrentStateThenEveryChange() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            for _ in 1...5 { _ = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/late", wait: .applied) }
            // Entries of other instances, before and after: the handle reads past them.
            _ = try await cluster.client(2).emit(json: #"{"add":{"_0":7}}"#, to: "counter/other", wait: .applied)

            let late = try await cluster.client(2).flow(CounterFlow.self, "late")
            #expect(await late.state.count == 5)
            var changes = await late.stateChanges().makeAsyncIterator()
            #expect(await changes.next()?.count == 5)
            for amount in [1, 2, 3] {
                _ = try await cluster.client(1).emit(json: #"{"add":{"_0":\#(amount)}}"#, to: "counter/late")
                _ = try await cluster.client(1).emit(json: #"{"increment":{}}"#, to: "counter/other")
            }
            #expect(await changes.next()?.count == 6)
            #expect(await changes.next()?.count == 8)
            #expect(await changes.next()?.count == 11)

            // An instance that has had no event starts from the flow's initial state.
            let fresh = try await cluster.client(1).flow(CounterFlow.self, "fresh")
            #expect(await fresh.state == CounterFlow.initialState)
            #expect(await fresh.lastSeq == 0)
            try await fresh.emit(.add(4), wait: .applied)
            #expect(await fresh.state.count == 4)
            await late.close()
            await fresh.close()
        }
    }

    @Test func killingTheNodeAHandleEmitsThroughGivesAClearErrorNotAHang() async throws {
        try await TestCluster.run(nodes: 2) { cluster in
            guard let node = cluster.node(2) else { throw HarnessError("no node 2") }
            let client = try await ClusterClient(endpoint: node.clientEndpoint, timeout: .seconds(2), logger: cluster.logger)
            let handle = try await client.flow(CounterFlow.self, "doomed")
            try await handle.emit(.increment, wait: .applied)
            await cluster.killNode(2)

            let started = ContinuousClock.now
            await #expect {
                try await handle.emit(.increment, wait: .applied)
            } throws: { error in
                guard (error as? ClusterClientError)?.code == .timedOut else { return false }
                return "\(error)".contains("is the node running")
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            // The protocol's emit cannot throw: it keeps the error.
            await handle.emit(.increment)
            #expect(await handle.lastEmitError is ClusterClientError)

            // The handle follows the coordinator, not the node: events through another node still
            // reach it.
            let seq = try await cluster.client(1).emit(json: #"{"add":{"_0":10}}"#, to: "counter/doomed").seq
            try await handle.waitUntilApplied(seq)
            #expect(await handle.state.count == 11)
            await handle.close()
            await client.close()
        }
    }

    @Test func aHandleRefusesAFlowTheNodeDoesNotRun() async throws {
        try await TestCluster.run(nodes: 1) { cluster in
            await #expect {
                _ = try await cluster.client(1).flow(CounterFlow.self, "x", as: "tally")
            } throws: { error in
                (error as? ProtocolError)?.code == .unknownFlow && "\(error)".contains("counter")
            }
            await #expect(throws: ProtocolError.self) {
                _ = try await cluster.client(1).flow(CounterFlow.self, "")
            }
        }
    }
}
