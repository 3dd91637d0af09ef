@testable import FlowKitCluster
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
}
