import Foundation
@_spi(Wire) import FlowKitCluster
import FlowKitExamples
import Testing

extension ClusterProcessTests {
    /// Effects outlive their node (docs/EFFECTS.md). Two timers and a stream run at node 1; it is
    /// killed with -9. The coordinator declares it down after the lease and orders takeovers: the
    /// survivors resume them from their states, at their own pace (one tick a second, not two). A
    /// cancel from a node that does not run the timer stops it; node 1, restarted with its id, is a
    /// new process: it converges and runs none of them.
    @Test func effectsOfAKilledNodeContinueOnTheSurvivors() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let timers = ["timer/a", "timer/b"]
            var started: UInt64 = 0
            for address in timers {
                started = try await cluster.client(1).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: address, wait: .applied).seq
            }
            started = try await cluster.client(1).emit(json: #"{"startStreaming":{}}"#, to: "streaming/s", wait: .applied).seq
            for address in timers { try await Self.waitForTicks(2, at: address, on: [2], after: started, in: cluster) }
            // A third timer, stopped by an operator's cancel: its state still says it runs, but a
            // cancelled effect is never taken over.
            let cancelled = try await cluster.client(1).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: "timer/c", wait: .applied)
            try await Self.waitForTicks(1, at: "timer/c", on: [2], after: cancelled.seq, in: cluster)
            let cancel = try await cluster.client(3).cancel(at: "timer/c", id: "timer", wait: .applied)
            _ = try await eventually("timer/c stopped at node 1", timeout: .seconds(10), every: .milliseconds(50)) {
                try await cluster.client(1).status().runningEffects == 3 ? true : nil
            }
            let frozen = try await cluster.client(2).query("timer/c", minApplied: cancel.seq).decode(TimerFlow.State.self)
            let oldSession = try await cluster.client(1).status().session

            await cluster.killNode(1)
            let killedAt = UInt64(Date().timeIntervalSince1970 * 1_000_000)
            let before = try await Self.ticks(timers, on: 2, in: cluster)
            // Resumed: every timer ticks again, and the survivors run the three effects.
            let resumed = try await eventually("the effects resumed on the survivors", timeout: .seconds(20), every: .milliseconds(100)) {
                let now = try await Self.ticks(timers, on: 2, in: cluster)
                let running = try await cluster.client(2).status().runningEffects + cluster.client(3).status().runningEffects
                return zip(now, before).allSatisfy { $0 > $1 + 1 } && running == 3 ? now : nil
            }
            let head = try await cluster.client(2).status().applied
            let log = try await cluster.readLog(from: started + 1, through: head)
            let takeovers = log.filter { $0.kind == .takeover }
            #expect(Set(takeovers.map(\.address)) == Set(timers + ["timer/c", "streaming/s"]), "one takeover per instance: \(takeovers.map(\.address))")
            for takeover in takeovers {
                let moved = try Takeover(payload: takeover.payload)
                #expect(moved.from == EffectOwner(node: 1, session: oldSession) && moved.to.node != 1)
                // Nothing of the old owner's after the takeover; the new owner's events only.
                let after = log.filter { $0.address == takeover.address && $0.seq > takeover.seq && $0.kind == .event }
                #expect(after.allSatisfy { $0.origin == moved.to.node && $0.session == moved.to.session }, "\(takeover.address): \(after.map(\.origin))")
            }
            if let first = takeovers.first, let tick = log.first(where: { $0.seq > first.seq && $0.kind == .event && $0.origin != 1 }) {
                print(
                    "takeover: ordered \(Double(first.committedAt - killedAt) / 1e6) s after the kill; first resumed event \(Double(tick.committedAt - killedAt) / 1e6) s after"
                )
            }

            // The wall, deterministically: a connection speaking for node 1's old process submits a
            // tick under the term of the entry that started timer/a, and one as a client (term 0).
            let dealer = try await RawDealer(endpoint: try #require(cluster.coordinatorEndpoints?.submit), logger: cluster.logger)
            try await dealer.sayHello(node: 1, session: oldSession)
            let tick = Array(#"{"timerTick":{}}"#.utf8)
            try await dealer.send(SubmitMessage(origin: 1, session: oldSession, submissions: [
                Submission(submission: 1 << 40, kind: .event, codec: .json, submittedAt: 0, term: started, address: "timer/a", payload: tick),
                Submission(submission: 1 << 40 + 1, kind: .event, codec: .json, submittedAt: 0, term: 0, address: "timer/a", payload: tick),
            ]).frames)
            var acks: [AckMessage.Ack] = []
            while acks.count < 2, let reply = try await dealer.receive(timeout: .seconds(10)) { acks += try AckMessage(frames: reply).acks }
            await dealer.close()
            #expect(acks.first { $0.submission == 1 << 40 }?.reason == .staleOwner, "\(acks)")
            #expect(acks.first { $0.submission == 1 << 40 + 1 }?.status == .ordered, "a client's emit is never fenced: \(acks)")

            // At their own pace: one tick a second per timer, not one per owner.
            let paceStart = ContinuousClock.now
            let paceBefore = try await Self.ticks(timers, on: 2, in: cluster)
            try await Task.sleep(for: .seconds(3))
            let paceAfter = try await Self.ticks(timers, on: 2, in: cluster)
            let seconds = Int((ContinuousClock.now - paceStart) / .seconds(1)) + 1
            for (index, address) in timers.enumerated() {
                let ticked = paceAfter[index] - paceBefore[index]
                #expect(ticked <= seconds + 1, "\(address) ticked \(ticked) times in about \(seconds) s")
            }
            _ = resumed
            let stillFrozen = try await cluster.client(2).query("timer/c", minApplied: 0).decode(TimerFlow.State.self)
            #expect(stillFrozen.isTimerActive && stillFrozen.secondsElapsed <= frozen.secondsElapsed + 1, "timer/c: \(frozen) then \(stillFrozen)")

            // Node 1 again, with its id: a new process, which owns nothing its predecessor did.
            try await cluster.startNodes([1])
            let restarted = try await eventually("node 1 caught up", timeout: .seconds(20), every: .milliseconds(100)) {
                let status = try await cluster.client(1).status()
                return status.applied >= head ? status : nil
            }
            #expect(restarted.session != oldSession)
            #expect(restarted.runningEffects == 0, "the restarted node runs none of the moved effects")

            // A cancel from a node that does not run timer/a stops it where it runs now.
            let owner = try #require(takeovers.first { $0.address == "timer/a" }.map { try Takeover(payload: $0.payload).to.node })
            let other = [1, 2, 3].first { UInt32($0) != owner }!
            let stop = try await cluster.client(other).emit(json: #"{"stop":{}}"#, to: "timer/a", wait: .applied)
            _ = try await eventually("timer/a stopped", timeout: .seconds(10), every: .milliseconds(100)) {
                let statuses = try await [1, 2, 3].asyncMap { try await cluster.client($0).status() }
                return statuses.map(\.runningEffects).reduce(0, +) == 2 ? true : nil
            }
            let stopped = try await cluster.client(2).query("timer/a", minApplied: stop.seq).decode(TimerFlow.State.self)
            try await Task.sleep(for: .seconds(2))
            let still = try await cluster.client(2).query("timer/a", minApplied: 0).decode(TimerFlow.State.self)
            #expect(!still.isTimerActive && still.secondsElapsed <= stopped.secondsElapsed + 1, "timer/a: \(stopped) then \(still)")
            _ = try await cluster.waitUntilConverged()
        }
    }

    /// Fencing: node 1, which runs a timer, is paused (SIGSTOP) for three times the lease. The
    /// timer moves to a survivor meanwhile; when node 1 goes on (SIGCONT) its own timer task wakes
    /// too, but none of its ticks is ordered: the coordinator refuses them by their ownership
    /// term, and node 1 stops the timer when it applies the takeover.
    @Test func anOwnerPausedPastItsLeaseGetsNothingOrderedAfterItWakes() async throws {
        try await TestCluster.run(nodes: 3) { cluster in
            let address = "timer/p"
            let start = try await cluster.client(1).emit(json: #"{"toggleTimerButtonTapped":{}}"#, to: address, wait: .applied)
            try await Self.waitForTicks(2, at: address, on: [2], after: start.seq, in: cluster)
            let paused = try await cluster.client(1).status()

            cluster.signalNode(1, SIGSTOP)
            try await Task.sleep(for: .seconds(9))
            let during = try await Self.ticks([address], on: 2, in: cluster)[0]
            #expect(during > 2, "the timer went on at a survivor while node 1 was paused")
            cluster.signalNode(1, SIGCONT)

            _ = try await eventually("node 1 applied the takeover and stopped its timer", timeout: .seconds(20), every: .milliseconds(100)) {
                let status = try await cluster.client(1).status()
                return status.applied > paused.applied + 3 && status.runningEffects == 0 ? status : nil
            }
            try await Task.sleep(for: .seconds(2))
            let head = try await cluster.client(2).status().applied
            let log = try await cluster.readLog(from: start.seq + 1, through: head)
            let takeover = try #require(log.first { $0.kind == .takeover && $0.address == address })
            let stale = log.filter { $0.seq > takeover.seq && $0.origin == 1 && $0.session == paused.session && $0.address == address }
            #expect(stale.isEmpty, "the paused owner's ticks were ordered after the takeover at \(takeover.seq): \(stale.map(\.seq))")
            let refused = try await cluster.client(1).status().staleSubmissions ?? 0
            print("fencing: node 1's submissions refused as stale after it woke: \(refused)")
            _ = try await cluster.waitUntilConverged()
        }
    }

    /// The timers' elapsed seconds at node `id`, in the order given.
    static func ticks(_ addresses: [String], on id: Int, in cluster: TestCluster) async throws -> [Int] {
        var result: [Int] = []
        for address in addresses {
            result.append(try await cluster.client(id).query(address, minApplied: 0).decode(TimerFlow.State.self).secondsElapsed)
        }
        return result
    }
}
