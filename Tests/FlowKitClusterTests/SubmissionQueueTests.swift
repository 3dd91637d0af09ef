@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct SubmissionQueueTests {
    private let retry: UInt64 = 1_000

    private func queue(adding count: Int, payloadBytes: Int = 4, now: UInt64 = 0) -> SubmissionQueue {
        var queue = SubmissionQueue(capacity: 100)
        for _ in 0..<count {
            _ = queue.add(kind: .event, codec: .json, address: "counter/a", payload: Array(repeating: 1, count: payloadBytes), waiter: .effect, now: now)
        }
        return queue
    }

    private func ids(_ submissions: [Submission]) -> [UInt64] { submissions.map(\.submission) }

    @Test func newSubmissionsGoOnceInOrderThenAgainAfterTheRetryInterval() {
        var queue = queue(adding: 3)
        #expect(ids(queue.due(now: 10, retryAfter: retry)) == [1, 2, 3])
        #expect(queue.due(now: 20, retryAfter: retry).isEmpty)
        _ = queue.add(kind: .event, codec: .json, address: "counter/a", payload: [], waiter: .effect, now: 30)
        #expect(ids(queue.due(now: 30, retryAfter: retry)) == [4])
        #expect(ids(queue.due(now: 1_010, retryAfter: retry)) == [1, 2, 3])
        #expect(ids(queue.due(now: 1_030, retryAfter: retry)) == [4])
        #expect(queue.pending[1]?.attempts == 2)
    }

    @Test func acknowledgedSubmissionsAreNeverSentAgain() {
        var queue = queue(adding: 4)
        _ = queue.due(now: 0, retryAfter: retry)
        #expect(queue.acknowledge(2) != nil)
        #expect(queue.acknowledge(2) == nil)
        _ = queue.acknowledge(4)
        #expect(ids(queue.due(now: 5_000, retryAfter: retry)) == [1, 3])
        #expect(queue.count == 2)
        // Acknowledged before it was ever sent.
        _ = queue.add(kind: .event, codec: .json, address: "counter/a", payload: [], waiter: .effect, now: 0)
        _ = queue.acknowledge(5)
        #expect(queue.due(now: 5_001, retryAfter: retry).isEmpty)
    }

    @Test func aMessageStopsAtTheLimitAndTheByteBudgetAndTheRestFollows() {
        var queue = queue(adding: 10, payloadBytes: 100)
        #expect(ids(queue.due(now: 0, retryAfter: retry, limit: 4)) == [1, 2, 3, 4])
        #expect(ids(queue.due(now: 0, retryAfter: retry, maxBytes: 250)) == [5, 6])
        #expect(ids(queue.due(now: 0, retryAfter: retry)) == [7, 8, 9, 10])
        // Retries respect the budget too, and keep their turn.
        #expect(ids(queue.due(now: 2_000, retryAfter: retry, maxBytes: 150)) == [1])
        #expect(ids(queue.due(now: 2_000, retryAfter: retry, limit: 3)) == [2, 3, 4])
    }

    @Test func resendAllSendsEverythingPendingAtOnceInOrder() {
        var queue = queue(adding: 5)
        _ = queue.due(now: 0, retryAfter: retry)
        _ = queue.acknowledge(3)
        queue.resendAll()
        #expect(ids(queue.due(now: 1, retryAfter: retry)) == [1, 2, 4, 5])
        // Each went once: nothing is due again before the retry interval.
        #expect(queue.due(now: 2, retryAfter: retry).isEmpty)
        #expect(ids(queue.due(now: 1_001, retryAfter: retry)) == [1, 2, 4, 5])
    }
}
