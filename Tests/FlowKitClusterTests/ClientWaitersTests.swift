@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct ClientWaitersTests {
    let alice = RouterEnvelope(identity: [1], delimited: false)
    let bob = RouterEnvelope(identity: [2], delimited: true)
    let second: UInt64 = 1_000_000

    @Test func anEmitWaitingForApplyIsAnsweredOnceItsSeqIsApplied() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        waiters.waitUntilApplied(seq: 10, epoch: 3, peer: alice, request: 7)
        #expect(waiters.applied(9, now: 100).isEmpty)
        #expect(waiters.applied(12, now: 200) == [.reply(.emitted(request: 7, seq: 10, epoch: 3, applied: true), to: alice)])
        #expect(waiters.applied(13, now: 300).isEmpty, "answered once")
        #expect(waiters.isEmpty)
    }

    @Test func anOrderedEmitIsAnsweredAtOnceUnlessItsClientWaitsForWhatIsNotAppliedYet() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        #expect(
            waiters.ordered(seq: 10, epoch: 3, wait: .ordered, peer: alice, request: 1, applied: 2)
                == [.reply(.emitted(request: 1, seq: 10, epoch: 3, applied: false), to: alice)]
        )
        #expect(
            waiters.ordered(seq: 10, epoch: 3, wait: .applied, peer: alice, request: 2, applied: 10)
                == [.reply(.emitted(request: 2, seq: 10, epoch: 3, applied: true), to: alice)]
        )
        // A duplicate whose seq the coordinator forgot: there is nothing to wait for.
        #expect(
            waiters.ordered(seq: 0, epoch: 0, wait: .applied, peer: bob, request: 3, applied: 10)
                == [.reply(.emitted(request: 3, seq: 0, epoch: 0, applied: false), to: bob)]
        )
        #expect(waiters.isEmpty)
        #expect(waiters.ordered(seq: 11, epoch: 3, wait: .applied, peer: bob, request: 4, applied: 10).isEmpty)
        #expect(waiters.applied(11, now: 1) == [.reply(.emitted(request: 4, seq: 11, epoch: 3, applied: true), to: bob)])
    }

    @Test func aQueryIsAnsweredWhenItsMinimumIsAppliedOrFailsAtItsDeadline() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        waiters.waitForQuery(min: 5, address: "counter/a", peer: alice, request: 1, now: 0)
        waiters.waitForQuery(min: 50, address: "counter/b", peer: bob, request: 2, now: 0)
        #expect(waiters.released(applied: 5) == [.answerQuery(request: 1, address: "counter/a", to: alice)])
        #expect(waiters.tick(applied: 6, now: 4 * second).isEmpty, "before the deadline")
        let expired = waiters.tick(applied: 6, now: 5 * second)
        guard case .reply(.error(let request, let error), let peer)? = expired.first else {
            Issue.record("expected an error reply, got \(expired)")
            return
        }
        #expect(expired.count == 1 && request == 2 && peer == bob)
        #expect(error.code == .coordinatorUnavailable)
        #expect(error.message.contains("applied 6, not yet 50"))
        #expect(waiters.isEmpty)
    }

    @Test func watchersHearProgressAfterEveryBatchAndEveryTickUntilTheirWatchEnds() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        // At once, with the time of the watch (nothing applied yet).
        #expect(waiters.watch(peer: alice, request: 4, seconds: 2, applied: 0, now: 10) == [.reply(.progress(request: 4, applied: 0, time: 10), to: alice)])
        // After a batch: the time it was applied, on the batch and again on later ticks.
        #expect(waiters.applied(8, now: 500) == [.reply(.progress(request: 4, applied: 8, time: 500), to: alice)])
        #expect(waiters.tick(applied: 8, now: 900) == [.reply(.progress(request: 4, applied: 8, time: 500), to: alice)])
        // The watch ends two seconds after it began.
        #expect(waiters.tick(applied: 8, now: 10 + 2 * second + 1).isEmpty)
        #expect(!waiters.hasWatchers)
    }

    @Test func aRepeatedWatchReplacesTheFirstAndTheOldestWatchersGoFirst() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        _ = waiters.watch(peer: alice, request: 1, seconds: 60, applied: 0, now: 0)
        #expect(waiters.watch(peer: alice, request: 1, seconds: 60, applied: 0, now: 1).count == 1, "one watcher, not two")
        for index in 0..<ClientWaiters.maxWatchers {
            _ = waiters.watch(peer: bob, request: UInt64(100 + index), seconds: 60, applied: 0, now: 2)
        }
        let progress = waiters.tick(applied: 0, now: 3)
        #expect(progress.count == ClientWaiters.maxWatchers)
        #expect(!progress.contains(.reply(.progress(request: 1, applied: 0, time: 3), to: alice)), "alice's, the oldest, went")
    }

    @Test func aWatchLastsAtMostAnHour() {
        var waiters = ClientWaiters(queryTimeout: .seconds(5))
        _ = waiters.watch(peer: alice, request: 1, seconds: .max, applied: 0, now: 0)
        #expect(waiters.tick(applied: 0, now: 3_600 * second).count == 1)
        #expect(waiters.tick(applied: 0, now: 3_600 * second + 1).isEmpty)
    }
}
