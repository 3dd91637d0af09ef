@testable import FlowKitCluster
import Testing

@Suite struct ReplicationFeedTests {
    func records(_ seqs: ClosedRange<Int>, size: Int = 10) -> [[UInt8]] {
        seqs.map { [UInt8](repeating: UInt8($0 % 256), count: size) }
    }

    @Test func aHeldFetchIsAnsweredFromTheGroupsMadeDurableInItsTerm() {
        let feed = ReplicationFeed()
        // Not leading: nothing is answered from here.
        #expect(feed.read(from: 1, epoch: 3, maxBytes: 1_000) == .unavailable)
        feed.lead(epoch: 3, written: 10, committed: 8)
        #expect(feed.read(from: 11, epoch: 3, maxBytes: 1_000) == .nothingYet(committed: 8))
        feed.append(records(11...13), from: 11)
        feed.noteCommitted(12)
        #expect(feed.read(from: 12, epoch: 3, maxBytes: 1_000) == .records(records(12...13), committed: 12))
        // Another term's FETCH, one from before the term began, or past the end: not from here.
        #expect(feed.read(from: 12, epoch: 2, maxBytes: 1_000) == .unavailable)
        #expect(feed.read(from: 10, epoch: 3, maxBytes: 1_000) == .unavailable)
        #expect(feed.read(from: 15, epoch: 3, maxBytes: 1_000) == .unavailable)
        #expect(feed.read(from: 14, epoch: 3, maxBytes: 1_000) == .nothingYet(committed: 12))
        // At most maxBytes, and at least one record.
        #expect(feed.read(from: 11, epoch: 3, maxBytes: 25) == .records(records(11...12), committed: 12))
        #expect(feed.read(from: 11, epoch: 3, maxBytes: 1) == .records(records(11...11), committed: 12))
        // Stepped down: nothing more.
        feed.stop()
        #expect(feed.read(from: 12, epoch: 3, maxBytes: 1_000) == .unavailable)
    }

    @Test func theFeedKeepsItsNewestBytesAndStartsOverAfterAGap() {
        let feed = ReplicationFeed(maxBytes: 50)
        feed.lead(epoch: 1, written: 0, committed: 0)
        feed.append(records(1...4), from: 1)
        feed.append(records(5...8), from: 5)
        // 80 bytes written, 50 kept: the oldest went.
        #expect(feed.read(from: 3, epoch: 1, maxBytes: 1_000) == .unavailable)
        #expect(feed.read(from: 4, epoch: 1, maxBytes: 1_000) == .records(records(4...8), committed: 0))
        // A group that does not continue the feed replaces it.
        feed.append(records(20...21), from: 20)
        #expect(feed.read(from: 8, epoch: 1, maxBytes: 1_000) == .unavailable)
        #expect(feed.read(from: 20, epoch: 1, maxBytes: 1_000) == .records(records(20...21), committed: 0))
    }
}
