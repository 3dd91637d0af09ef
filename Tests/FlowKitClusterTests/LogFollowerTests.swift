@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct LogFollowerTests {
    private func entries(_ seqs: some Sequence<UInt64>) -> [Entry] {
        seqs.map { seq in
            Entry(seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
                  submittedAt: 0, committedAt: 0, address: "counter/a", payload: [])
        }
    }

    @Test func aGapAsksForTheMissingRangeOnceUntilItTimesOut() {
        var follower = LogFollower(retryAfter: 1_000)
        let first = follower.receive(entries([1, 2, 5]), now: 0)
        // The request goes first, so the coordinator reads the range while these are applied.
        guard first.count == 2, case .requestRange(let request) = first[0], case .apply(let applied) = first[1] else {
            Issue.record("expected a range request then apply, got \(first)")
            return
        }
        #expect(applied.map(\.seq) == [1, 2])
        #expect(request.from == 3 && request.to == 4)
        #expect(follower.receive(entries([6]), now: 10).isEmpty)       // already asked
        #expect(follower.tick(now: 2_000).count == 1)                    // asked again after the timeout
        let repaired = follower.receive(RangeMessage(request: 2, epoch: 1, head: 6, entries: entries(3...4)), now: 2_001)
        #expect(repaired == [.apply(entries(3...6))])
    }

    private func ranges(_ actions: [LogFollower.Action]) -> [ClosedRange<UInt64>] {
        actions.compactMap { action in
            guard case .requestRange(let request) = action else { return nil }
            #expect(request.maxCount == UInt32(request.to - request.from + 1))
            return request.from...request.to
        }
    }

    private func requestIDs(_ actions: [LogFollower.Action]) -> [UInt64] {
        actions.compactMap { action in
            guard case .requestRange(let request) = action else { return nil }
            return request.request
        }
    }

    @Test func aLongReplayKeepsTwoRangesInFlight() {
        var follower = LogFollower(retryAfter: 1_000_000, rangeSize: 100)
        let first = follower.noteHead(1_000, now: 0)
        #expect(ranges(first) == [1...100, 101...200])
        // Nothing more until one is answered.
        #expect(follower.noteHead(1_000, now: 1).isEmpty)
        let reply = follower.receive(RangeMessage(request: requestIDs(first)[0], epoch: 1, head: 1_000, entries: entries(1...100)), now: 2)
        #expect(ranges(reply) == [201...300])
        #expect(reply.last == .apply(entries(1...100)))
        #expect(follower.applied == 100)
    }

    @Test func aShortReplyHasItsRemainderAskedForBeforeAnythingNewer() {
        var follower = LogFollower(retryAfter: 1_000_000, rangeSize: 100)
        let first = follower.noteHead(1_000, now: 0)
        // The coordinator capped the first range by bytes: 1...60 came back, 61...100 did not.
        let reply = follower.receive(RangeMessage(request: requestIDs(first)[0], epoch: 1, head: 1_000, entries: entries(1...60)), now: 1)
        #expect(ranges(reply) == [61...100])
        // The second range, answered in full, waits behind the hole, and nothing newer is asked for
        // while the hole's request is in flight; its reply releases both and refills the pipeline.
        let second = follower.receive(RangeMessage(request: requestIDs(first)[1], epoch: 1, head: 1_000, entries: entries(101...200)), now: 2)
        #expect(second.isEmpty)
        #expect(follower.applied == 60)
        let filled = follower.receive(RangeMessage(request: requestIDs(reply)[0], epoch: 1, head: 1_000, entries: entries(61...100)), now: 3)
        #expect(ranges(filled) == [201...300, 301...400])
        #expect(filled.last == .apply(entries(61...200)))
    }

    @Test func aRangeThePublishSocketFilledNoLongerCountsAsInFlight() {
        var follower = LogFollower(retryAfter: 1_000_000, rangeSize: 10)
        #expect(ranges(follower.noteHead(25, now: 0)) == [1...10, 11...20])
        // The live stream delivered 1...10 before the reply did: the slot is free for 21...25.
        let live = follower.receive(entries(1...10), now: 1)
        #expect(ranges(live) == [21...25])
    }

    @Test func aCompactedRangeBecomesASnapshotJoinAndHeldEntriesFollowIt() {
        var follower = LogFollower()
        _ = follower.noteHead(100, now: 0)
        let actions = follower.receive(ErrorReply(request: 1, error: ProtocolError(.notFound, "compacted")), now: 1)
        guard case .requestSnapshot(let request) = actions.first else {
            Issue.record("expected a snapshot request, got \(actions)")
            return
        }
        #expect(follower.receive(entries([101, 102]), now: 2).isEmpty)   // held while joining
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 100, state: [])
        let done = follower.receive(
            SnapshotChunkMessage(request: request.request, seq: 100, epoch: 1, chunk: 0, isLast: true, instances: [instance]),
            now: 3
        )
        #expect(done == [.restore(seq: 100, instances: [instance], then: entries([101, 102]))])
        #expect(follower.applied == 102)
    }

    /// A snapshot older than what the node applied is not restored (it would take the node back
    /// to apply, and run the effects of, its own entries again): a coordinator restarted moments
    /// before served its replica at seq 0 (the simulation, 3 coordinators, seed 104). The held
    /// entries go on and the missing range is asked for again.
    @Test func aSnapshotOlderThanWhatTheNodeAppliedIsNotRestored() {
        var follower = LogFollower()
        _ = follower.receive(entries(1...5), now: 0)
        _ = follower.noteHead(100, now: 0)
        let actions = follower.receive(ErrorReply(request: 1, error: ProtocolError(.notFound, "compacted")), now: 1)
        guard case .requestSnapshot(let request) = actions.first else {
            Issue.record("expected a snapshot request, got \(actions)")
            return
        }
        #expect(follower.receive(entries([6, 7]), now: 2).isEmpty)  // held while joining
        let done = follower.receive(SnapshotChunkMessage(request: request.request, seq: 0, epoch: 1, chunk: 0, isLast: true, instances: []), now: 3)
        #expect(done.first == .apply(entries([6, 7])))
        #expect(!follower.isJoining && follower.applied == 7)
        #expect(ranges(done) == [8...100], "the missing range is asked for again")
    }

    /// A refusal of a repair no longer out (its entries came live) starts no snapshot join: a node
    /// that had caught up joined through a snapshot older than what it had applied and applied
    /// its own entries, and ran their effects, twice (the simulation, seed 507, with snapshots
    /// served from before the head).
    @Test func aLateRefusalOfARepairNoLongerOutStartsNoSnapshot() {
        var follower = LogFollower(retryAfter: 1_000_000, rangeSize: 10)
        #expect(ranges(follower.receive(entries([1, 2, 5]), now: 0)) == [3...4])
        // The live stream delivers what the repair asked for, before the coordinator's answer.
        #expect(follower.receive(entries([3, 4]), now: 1) == [.apply(entries(3...5))])
        let late = follower.receive(ErrorReply(request: 1, error: ProtocolError(.notFound, "compacted")), now: 2)
        #expect(late.isEmpty && !follower.isJoining && follower.applied == 5)
    }

    /// A snapshot of a million instances takes longer than ten retry intervals to arrive: while
    /// its chunks keep coming it is not asked for again (each new request began it again, and a
    /// node never joined); ten intervals with no chunk ask again.
    @Test func aSnapshotIsAskedAgainOnlyWhenItsChunksStopComing() {
        var follower = LogFollower(retryAfter: 100)
        _ = follower.noteHead(100, now: 0)
        guard case .requestSnapshot(let request) = follower.receive(ErrorReply(request: 1, error: ProtocolError(.notFound, "compacted")), now: 0).first else {
            Issue.record("expected a snapshot request")
            return
        }
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 100, state: [])
        for chunk in 0..<5 {
            let now = UInt64(chunk + 1) * 900
            #expect(follower.tick(now: now).isEmpty, "chunk \(chunk) is due within 1,000 µs of the last")
            let chunkMessage = SnapshotChunkMessage(request: request.request, seq: 100, epoch: 1, chunk: UInt32(chunk), isLast: false, instances: [instance])
            #expect(follower.receive(chunkMessage, now: now).isEmpty)
        }
        #expect(follower.tick(now: 4_500 + 1_000).isEmpty)
        guard case .requestSnapshot(let again) = follower.tick(now: 4_500 + 1_001).first else {
            Issue.record("a stalled snapshot is asked for again")
            return
        }
        #expect(again.request != request.request)
    }

    /// An ACK and the publication of what it acknowledges leave the coordinator together, on two
    /// connections; the ACK often arrives first. Its head is not a gap until the grace passes.
    @Test func anAcknowledgedHeadWaitsForThePublicationBeforeAnythingIsFetched() {
        var follower = LogFollower(retryAfter: 1_000_000, publicationGrace: 100)
        _ = follower.receive(entries(1...2), now: 0)
        #expect(follower.noteAnnouncedHead(5, now: 10).isEmpty)
        #expect(follower.knownHead == 5)
        #expect(follower.tick(now: 50).isEmpty)
        // The publication arrives: applied, and nothing was ever fetched.
        #expect(follower.receive(entries(3...5), now: 60) == [.apply(entries(3...5))])
        #expect(follower.tick(now: 1_000).isEmpty)
    }

    @Test func anAcknowledgedHeadWhosePublicationIsLostIsFetchedOnceTheGracePasses() {
        var follower = LogFollower(retryAfter: 1_000_000, publicationGrace: 100)
        _ = follower.receive(entries(1...2), now: 0)
        _ = follower.noteAnnouncedHead(4, now: 10)
        _ = follower.noteAnnouncedHead(6, now: 80)
        #expect(follower.tick(now: 109).isEmpty)
        // The oldest announcement is overdue: everything up to the newest head is fetched.
        #expect(ranges(follower.tick(now: 110)) == [3...6])
    }

    @Test func aGapBelowAnArrivedEntryIsFetchedAtOnceWhateverWasAnnounced() {
        var follower = LogFollower(retryAfter: 1_000_000, publicationGrace: 100)
        _ = follower.receive(entries(1...2), now: 0)
        _ = follower.noteAnnouncedHead(9, now: 1)
        // 3 and 4 were lost on the publish socket (5 came after them on the same connection).
        let actions = follower.receive(entries([5]), now: 2)
        #expect(ranges(actions) == [3...4])
    }

    @Test func aHeartbeatConfirmsAnAnnouncedHeadAtOnce() {
        var follower = LogFollower(retryAfter: 1_000_000, publicationGrace: 100)
        _ = follower.receive(entries(1...2), now: 0)
        _ = follower.noteAnnouncedHead(9, now: 1)
        // A heartbeat is published after the entries before it, on the same connection.
        #expect(ranges(follower.noteHead(9, now: 3)) == [3...9])
    }
}
