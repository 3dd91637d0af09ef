import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    /// Keystrokes at two nodes within the search's 300 ms debounce: the second one's
    /// `cancelInFlight` cancels the first one's search at the node where it runs, so only the
    /// results for the final text are ever ordered.
    @Test func keystrokeAtAnotherNodeCancelsTheSearchInFlight() async throws {
        let live = SearchClient.liveValue
        let wanted = try await live.search("al", .all, .ascending)
        let stale = try await live.search("a", .all, .ascending)
        try #require(!wanted.isEmpty && wanted != stale)

        try await TestCluster.run(nodes: 3) { cluster in
            let address = "search/s"
            let began = ContinuousClock.now
            let first = try await cluster.client(1).emit(json: #"{"searchTextChanged":{"_0":"a"}}"#, to: address)
            let second = try await cluster.client(2).emit(json: #"{"searchTextChanged":{"_0":"al"}}"#, to: address)
            let elapsed = ContinuousClock.now - began
            try #require(elapsed < .milliseconds(200), "both keystrokes must be ordered well within the debounce; took \(elapsed)")
            #expect((first.seq, second.seq) == (1, 2))

            // Watch every node until the results land, and for a while after: the search for "a"
            // would have landed 300 ms after its keystroke.
            var sawResults = false
            var quietUntil: ContinuousClock.Instant?
            let deadline = ContinuousClock.now + .seconds(10)
            while quietUntil.map({ ContinuousClock.now < $0 }) ?? true {
                try #require(ContinuousClock.now < deadline, "no results for \"al\" on every node within 10 s")
                var arrived = 0
                for id in cluster.nodeIDs {
                    let state = try await cluster.client(id).query(address, minApplied: second.seq).decode(SearchFlow.State.self)
                    try #require(state.results != stale || stale.isEmpty, "node \(id) shows the results for \"a\": \(state.results)")
                    #expect(state.results.isEmpty || state.results == wanted, "node \(id) shows unexpected results \(state.results)")
                    if state.results == wanted {
                        #expect(state.searchText == "al")
                        arrived += 1
                    }
                }
                if arrived == cluster.nodeIDs.count, !sawResults {
                    sawResults = true
                    quietUntil = ContinuousClock.now + .milliseconds(700)
                }
                try await Task.sleep(for: .milliseconds(20))
            }

            // Three entries in all: "a", "al", and the results for "al". Had the search for "a"
            // not been cancelled, its results would be a fourth.
            let states = try await cluster.states(of: address)
            let reference = try #require(states[1])
            for (id, state) in states {
                #expect(state.lastSeq == 3, "node \(id): \(address) last entry")
                #expect(state.text == reference.text && state.digest == reference.digest, "node \(id) differs from node 1")
                let status = try await cluster.client(id).status()
                #expect(status.applied == 3, "node \(id): entries ordered")
                #expect(status.runningEffects == 0)
            }
            let final = try reference.decode(SearchFlow.State.self)
            #expect(final.searchText == "al")
            #expect(final.results == wanted)
            #expect(final.errorMessage == nil)
        }
    }

    /// A stream started at node 1 delivers its chunks to every node; `stopStreaming` at node 2
    /// stops it cluster-wide.
    @Test func streamStartedAtOneNodeIsStoppedFromAnother() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let address = "streaming/s"
            let start = try await cluster.client(1).emit(json: #"{"startStreaming":{}}"#, to: address, wait: .applied)
            for id in [2, 3] {
                _ = try await eventually("node \(id) received two chunks", timeout: .seconds(10), every: .milliseconds(100)) {
                    let state = try await cluster.client(id).query(address, minApplied: start.seq).decode(StreamingFlow.State.self)
                    return state.received.count >= 2 ? state : nil
                }
            }
            let stop = try await cluster.client(2).emit(json: #"{"stopStreaming":{}}"#, to: address, wait: .applied)
            try await Self.expectFrozen(address, since: stop.seq, in: cluster) { (state: StreamingFlow.State) in
                #expect(!state.isStreaming)
                #expect(state.errorMessage == nil)
                #expect(state.received.count >= 2)
                #expect(state.received == (0..<state.received.count).map { "chunk \($0 + 1)" }, "chunks in order, none missing or twice")
            }
        }
    }
}
