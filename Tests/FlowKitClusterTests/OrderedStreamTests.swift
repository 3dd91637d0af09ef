@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct OrderedStreamTests {
    private func entries(_ seqs: some Sequence<UInt64>) -> [Entry] {
        seqs.map { seq in
            Entry(seq: seq, epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: seq,
                  submittedAt: 0, committedAt: 0, address: "counter/a", payload: [])
        }
    }

    @Test func inOrderEntriesAreReleasedAtOnce() {
        var stream = OrderedStream()
        #expect(stream.receive(entries(1...3)).map(\.seq) == [1, 2, 3])
        #expect(stream.missing == nil)
    }

    @Test func aGapHoldsLaterEntriesUntilRepaired() {
        var stream = OrderedStream()
        #expect(stream.receive(entries([1, 2, 5, 6])).map(\.seq) == [1, 2])
        #expect(stream.missing == 3...4)
        // The repair overlaps what was already applied and what waits: duplicates are dropped.
        #expect(stream.receive(entries(2...6)).map(\.seq) == [3, 4, 5, 6])
        #expect(stream.missing == nil)
        #expect(stream.waitingCount == 0)
    }

    @Test func eachGapIsMissingInTurnAsTheOnesBeforeItFill() {
        var stream = OrderedStream()
        #expect(stream.receive(entries([9, 10, 1, 5, 6])).map(\.seq) == [1])
        #expect(stream.missing == 2...4)
        #expect(stream.receive(entries([3])).map(\.seq) == [])
        #expect(stream.missing == 2...2)
        #expect(stream.receive(entries([2])).map(\.seq) == [2, 3])
        #expect(stream.missing == 4...4)
        #expect(stream.receive(entries([4])).map(\.seq) == [4, 5, 6])
        #expect(stream.missing == 7...8)
        #expect(stream.receive(entries(7...8)).map(\.seq) == [7, 8, 9, 10])
        #expect(stream.missing == nil)
        #expect(stream.waitingCount == 0)
    }

    @Test func aHeartbeatRevealsAnIdleGap() {
        var stream = OrderedStream()
        _ = stream.receive(entries(1...2))
        stream.noteHead(9)
        #expect(stream.missing == 3...9)
    }

    @Test func aFullBufferDropsArrivalsWhichAreFetchedAgain() {
        var stream = OrderedStream(maxEarly: 3)
        _ = stream.receive(entries([2, 3, 4, 5, 6]))
        #expect(stream.waitingCount == 3)
        #expect(stream.missing == 1...1)
        #expect(stream.receive(entries([1])).map(\.seq) == [1, 2, 3, 4])
        #expect(stream.missing == 5...6)
    }

    @Test func aSnapshotResetKeepsWhatFollowsIt() {
        var stream = OrderedStream()
        _ = stream.receive(entries([8, 11, 12]))
        #expect(stream.reset(to: 10).map(\.seq) == [11, 12])
        #expect(stream.applied == 12)
    }
}
