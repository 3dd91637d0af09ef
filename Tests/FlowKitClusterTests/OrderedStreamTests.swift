@_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import FlowKitExamples
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

    // MARK: Entries of a newer version than this build reads

    /// A build that reads `counter` up to version 2.
    static let readsVersion2: ReadableVersions = {
        var registry = FlowRegistry()
        registry.register(
            CounterFlow.self, as: "counter", version: 2, migrations: FlowMigrations().eventsUnchanged(from: 1).stateUnchanged(from: 1),
            initialState: { _ in CounterFlow.initialState }, flow: { CounterFlow() }
        )
        return ReadableVersions(registry)
    }()

    private func entry(_ seq: UInt64, version: UInt16, kind: EntryKind = .event, address: String = "counter/a") -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: kind, codec: .json, version: version, origin: 1, session: 1, submission: seq, submittedAt: 0,
            committedAt: 0, address: address, payload: []
        )
    }

    @Test func anEntryOfANewerVersionStopsTheStreamForGood() {
        var stream = OrderedStream(versions: Self.readsVersion2)
        let arriving = [entry(1, version: 1), entry(2, version: 2), entry(3, version: 3), entry(4, version: 1)]
        #expect(stream.receive(arriving).map(\.seq) == [1, 2])
        #expect(stream.unreadable == UnreadableEntry(seq: 3, flow: "counter", version: 3, reads: 2))
        // Nothing after it is released, and nothing is fetched: the wall is not a gap.
        #expect(stream.receive([entry(5, version: 1)]).isEmpty)
        #expect(stream.receive([entry(3, version: 3)]).isEmpty)
        #expect(stream.missing == nil)
        #expect(stream.applied == 2)
    }

    @Test func theWallHoldsWhenAGapBeforeItFills() {
        var stream = OrderedStream(versions: Self.readsVersion2)
        #expect(stream.receive([entry(1, version: 1), entry(3, version: 3), entry(4, version: 1)]).map(\.seq) == [1])
        #expect(stream.missing == 2...2)
        #expect(stream.receive([entry(2, version: 2)]).map(\.seq) == [2])
        #expect(stream.unreadable?.seq == 3)
        #expect(stream.missing == nil)
    }

    /// Entries that carry no payload of the flow's (version 0), and entries of a flow this build
    /// does not register (the replica refuses those, as ever), pass.
    @Test func onlyTheFlowsOwnNewerEventsStopIt() {
        var stream = OrderedStream(versions: Self.readsVersion2)
        let arriving = [entry(1, version: 0, kind: .cancelAll), entry(2, version: 9, address: "other/a"), entry(3, version: 2)]
        #expect(stream.receive(arriving).map(\.seq) == [1, 2, 3])
        #expect(stream.unreadable == nil)
        // A monitor, which decodes nothing, reads every version.
        var monitor = OrderedStream()
        #expect(monitor.receive([entry(1, version: 9)]).map(\.seq) == [1])
    }
}
