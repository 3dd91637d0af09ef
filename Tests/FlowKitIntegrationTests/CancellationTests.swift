import FlowKitCluster
import FlowKitExamples
import Foundation
import Testing

extension ClusterProcessTests {
    /// The timer's effect runs at node 1, where it was started; `stop` emitted at node 3 returns
    /// `.cancel(id:)`, which node 1 evaluates when it applies the entry: the ticks stop everywhere.
    @Test func stopEmittedAtOneNodeCancelsTheTimerRunningAtAnother() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let address = "timer/t"
            let start = try await cluster.client(1).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: address, wait: .applied)
            try await Self.waitForTicks(2, at: address, on: [2, 3], after: start.seq, in: cluster)
            let running = try await cluster.client(1).status().runningEffects
            #expect(running == 1, "node 1 runs the timer's effect")

            let stop = try await cluster.client(3).emit(json: #"{"stop":{}}"#, to: address, wait: .applied)
            try await Self.expectFrozen(address, since: stop.seq, in: cluster) { (state: TimerFlow.State) in
                #expect(!state.isTimerActive)
                #expect(state.secondsElapsed >= 2)
            }
        }
    }

    /// An operator's cancel (a control entry, `flowkit cancel`) from node 2 stops the timer
    /// running at node 1. It changes no state: the timer just stops ticking.
    @Test func operatorCancelAtOneNodeStopsTheTimerRunningAtAnother() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let address = "timer/x"
            let start = try await cluster.client(1).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: address, wait: .applied)
            try await Self.waitForTicks(2, at: address, on: [2, 3], after: start.seq, in: cluster)

            let cancel = try await cluster.client(2).cancel(at: address, id: "timer", wait: .applied)
            try await Self.expectFrozen(address, since: cancel.seq, in: cluster) { (state: TimerFlow.State) in
                #expect(state.isTimerActive, "a cancel entry does not go through the reducer")
                #expect(state.secondsElapsed >= 2)
            }
        }
    }

    /// Cancel ids compare type and value in the cluster, as in one process: three tickers run at
    /// node 1 under `First.timer`, `Second.timer` and the string `"timer"`; an effect at node 2
    /// cancels `First.timer` from inside running work, and only that ticker stops, on every node.
    /// An operator's cancel of the text `timer` then stops the other two, whatever their types.
    @Test func aFlowsCancelStopsItsOwnTypeAndAnOperatorsTheText() async throws {
        var options = TestCluster.Options()
        options.binary = "flowkit-testbed"
        try await TestCluster.run(nodes: 3, options: options) { cluster in
            let address = "tickers/t"
            let start = try await cluster.client(1).emit(json: #"{"start":{}}"#, to: address, wait: .applied)
            func ticks(minApplied seq: UInt64) async throws -> [String: Int] {
                try await cluster.client(3).query(address, minApplied: seq).decode(TickersState.self).ticks
            }
            _ = try await eventually("three tickers ticking", timeout: .seconds(10), every: .milliseconds(100)) {
                let now = try await ticks(minApplied: start.seq)
                return ["first", "second", "string"].allSatisfy { (now[$0] ?? 0) >= 2 } ? now : nil
            }

            let stop = try await cluster.client(2).emit(json: #"{"stopFirstLater":{}}"#, to: address, wait: .applied)
            // The typed cancel entry follows the stop; once node 1 has applied it, two tickers run.
            // A tick sent just before it may be ordered just after: look once they have landed.
            let stopped = try await eventually("the typed cancel applied on node 1", timeout: .seconds(10), every: .milliseconds(50)) {
                let status = try await cluster.client(1).status()
                return status.runningEffects == 2 ? status.applied : nil
            }
            // A First tick sent before the cancel may be ordered after it. Node 1 submits in order,
            // so once a Second tick sent later has landed (two ticks on: one may have been in
            // flight), every First tick has.
            let atStop = try await ticks(minApplied: max(stop.seq, stopped))
            let before = try await eventually("Second ticked twice more", timeout: .seconds(10), every: .milliseconds(50)) {
                let now = try await ticks(minApplied: 0)
                return (now["second"] ?? 0) >= (atStop["second"] ?? 0) + 2 ? now : nil
            }
            // Measured in the other tickers' ticks, not in this machine's seconds.
            let after = try await eventually("Second and the string ticked again", timeout: .seconds(10), every: .milliseconds(50)) {
                let now = try await ticks(minApplied: 0)
                return (now["second"] ?? 0) > (before["second"] ?? 0) && (now["string"] ?? 0) > (before["string"] ?? 0) ? now : nil
            }
            #expect(after["first"] == before["first"], "First.timer stopped: \(before) then \(after)")
            #expect((after["second"] ?? 0) > (before["second"] ?? 0), "Second.timer still ticks: \(before) then \(after)")
            #expect((after["string"] ?? 0) > (before["string"] ?? 0), "the string \"timer\" still ticks: \(before) then \(after)")

            let cancel = try await cluster.client(3).cancel(at: address, id: "timer", wait: .applied)
            // Ticks already sent are ordered after the cancel: look once nothing runs or waits to be sent.
            let head = try await settled(cluster.nodeIDs.map { cluster.client($0) }, runningEffects: 0)
            let stilled = try await cluster.states(of: address, minApplied: max(cancel.seq, head))
            try await Task.sleep(for: .seconds(1))
            let later = try await cluster.states(of: address, minApplied: max(cancel.seq, head))
            for id in cluster.nodeIDs {
                #expect(later[id]?.text == stilled[id]?.text && later[id]?.digest == later[1]?.digest, "node \(id): \(String(describing: later[id]?.text))")
                #expect(try await cluster.client(id).status().runningEffects == 0, "node \(id) still runs an effect")
            }
        }
    }

    struct TickersState: Decodable { var ticks: [String: Int] }

    /// Waits until `nodes` have applied at least `ticks` timer ticks of `address`.
    static func waitForTicks(_ ticks: Int, at address: String, on nodes: [Int], after seq: UInt64, in cluster: TestCluster) async throws {
        for id in nodes {
            _ = try await eventually("node \(id) applied \(ticks) ticks of \(address)", timeout: .seconds(10), every: .milliseconds(100)) {
                let state = try await cluster.client(id).query(address, minApplied: seq).decode(TimerFlow.State.self)
                return state.secondsElapsed >= ticks ? state : nil
            }
        }
    }

    /// Checks that nothing happens to `address` after the cancelling entry at `seq`: 2.5 s later
    /// (two and a half tick periods) every node still has the state it had right after `seq`, the
    /// instance's last entry is `seq`, nothing else was ordered, and no effect runs anywhere.
    static func expectFrozen<S: Decodable>(
        _ address: String,
        since seq: UInt64,
        in cluster: TestCluster,
        check: (S) throws -> Void
    ) async throws {
        let atCancel = try await cluster.states(of: address, minApplied: seq)
        try await Task.sleep(for: .milliseconds(2_500))
        let later = try await cluster.states(of: address, minApplied: seq)
        let reference = try #require(later[1])
        for id in cluster.nodeIDs {
            let state = try #require(later[id])
            #expect(state.lastSeq == seq, "node \(id): entries for \(address) after the cancel at \(seq): \(state.text)")
            #expect(state.text == atCancel[id]?.text, "node \(id): \(address) changed after the cancel")
            #expect(state.text == reference.text && state.digest == reference.digest, "node \(id) differs from node 1")
            let status = try await cluster.client(id).status()
            #expect(status.applied == seq, "node \(id): something was ordered after the cancel")
            #expect(status.runningEffects == 0, "node \(id) still runs \(status.runningEffects) effect(s)")
        }
        try check(try reference.decode(S.self))
    }
}
