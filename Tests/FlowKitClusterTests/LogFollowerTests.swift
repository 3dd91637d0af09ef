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

    /// Has `follower` learn of a head of 100 and have its repair refused as compacted: the
    /// snapshot request that starts its join.
    private func startJoin(_ follower: inout LogFollower) -> SnapshotRequest? {
        _ = follower.noteHead(100, now: 0)
        guard case .requestSnapshot(let request) = follower.receive(ErrorReply(request: 1, error: ProtocolError(.notFound, "compacted")), now: 0).first else {
            Issue.record("expected a snapshot request")
            return nil
        }
        return request
    }

    /// A snapshot of a million instances takes longer than ten retry intervals to arrive: while
    /// its chunks keep coming it is not asked for again (each new request began it again, and a
    /// node never joined); ten intervals with no chunk ask again.
    @Test func aSnapshotIsAskedAgainOnlyWhenItsChunksStopComing() {
        var follower = LogFollower(retryAfter: 100)
        guard let request = startJoin(&follower) else { return }
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 100, state: [])
        for chunk in 0..<5 {
            // The first within two retries of the request, the others up to ten after the last.
            let now = UInt64(chunk) * 900 + 150
            #expect(follower.tick(now: now).isEmpty, "chunk \(chunk) is due within 1,000 µs of the last")
            let chunkMessage = SnapshotChunkMessage(request: request.request, seq: 100, epoch: 1, chunk: UInt32(chunk), isLast: false, instances: [instance])
            #expect(follower.receive(chunkMessage, now: now).isEmpty)
        }
        #expect(follower.tick(now: 3_750 + 1_000).isEmpty)
        guard case .requestSnapshot(let again) = follower.tick(now: 3_750 + 1_001).first else {
            Issue.record("a stalled snapshot is asked for again")
            return
        }
        #expect(again.request != request.request)
        // A new join: the stalled request's chunks no longer count.
        let late = SnapshotChunkMessage(request: request.request, seq: 100, epoch: 1, chunk: 5, isLast: true, instances: [instance])
        #expect(follower.receive(late, now: 4_800).isEmpty && follower.isJoining)
    }

    /// A snapshot request or the first chunk of its answer lost on the way: the join asks again
    /// after two retries, not ten, and takes the first answer that comes to any of its requests,
    /// ignoring the others (a coordinator encoding a million instances answers them all late).
    @Test func aSnapshotWithNoChunkYetIsAskedAgainAndTheFirstAnswerToComeIsTaken() {
        var follower = LogFollower(retryAfter: 100)
        guard let first = startJoin(&follower) else { return }
        #expect(follower.tick(now: 200).isEmpty)
        guard case .requestSnapshot(let second) = follower.tick(now: 201).first else {
            Issue.record("no chunk within two retries: asked again")
            return
        }
        #expect(second.request != first.request)
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 90, state: [])
        func chunk(_ request: UInt64, _ number: UInt32, last: Bool, seq: UInt64 = 90) -> SnapshotChunkMessage {
            SnapshotChunkMessage(request: request, seq: seq, epoch: 1, chunk: number, isLast: last, instances: [instance])
        }
        // A chunk other than the first, of any request, does not start the answer followed.
        #expect(follower.receive(chunk(second.request, 1, last: false), now: 250).isEmpty && follower.isJoining)
        // The first request's answer comes first: followed, the second's ignored.
        #expect(follower.receive(chunk(first.request, 0, last: false), now: 260).isEmpty)
        #expect(follower.receive(chunk(second.request, 0, last: false, seq: 95), now: 270).isEmpty)
        #expect(follower.tick(now: 460).isEmpty, "chunks came: ten retries without one before asking again")
        let held = follower.receive(entries([91]), now: 280)
        #expect(held.isEmpty)
        let done = follower.receive(chunk(first.request, 1, last: true), now: 290)
        // Restored, then what follows asked for up to the head.
        #expect(done.first == .restore(seq: 90, instances: [instance, instance], then: entries([91])))
        #expect(!follower.isJoining)
        #expect(follower.receive(chunk(second.request, 1, last: true, seq: 95), now: 300).isEmpty, "the other answer is ignored")
    }

    /// Requests of a join beyond the last four are forgotten: their answers no longer count.
    @Test func aJoinFollowsTheAnswersOfItsLastFourRequests() {
        var follower = LogFollower(retryAfter: 100)
        var asked = startJoin(&follower).map { [$0.request] } ?? []
        for round in 1...4 {
            if case .requestSnapshot(let request) = follower.tick(now: UInt64(round) * 201).first { asked.append(request.request) }
        }
        #expect(asked.count == 5 && Set(asked).count == 5)
        let instance = SnapshotChunkMessage.Instance(address: "counter/a", lastSeq: 90, state: [])
        let oldest = SnapshotChunkMessage(request: asked[0], seq: 90, epoch: 1, chunk: 0, isLast: true, instances: [instance])
        #expect(follower.receive(oldest, now: 1_000).isEmpty && follower.isJoining)
        let second = SnapshotChunkMessage(request: asked[1], seq: 90, epoch: 1, chunk: 0, isLast: true, instances: [instance])
        #expect(follower.receive(second, now: 1_001).first == .restore(seq: 90, instances: [instance], then: []))
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
