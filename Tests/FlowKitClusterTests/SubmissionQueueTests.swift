@_spi(Wire) @testable import FlowKitCluster
import Testing

@Suite struct SubmissionQueueTests {
    private let retry: UInt64 = 1_000

    private func queue(adding count: Int, payloadBytes: Int = 4, now: UInt64 = 0) -> SubmissionQueue {
        var queue = SubmissionQueue(capacity: 100)
        for _ in 0..<count {
            _ = queue.add(kind: .event, codec: .json, version: 1, address: "counter/a", payload: Array(repeating: 1, count: payloadBytes), waiter: .effect, now: now)
        }
        return queue
    }

    private func ids(_ submissions: [Submission]) -> [UInt64] { submissions.map(\.submission) }

    @Test func newSubmissionsGoOnceInOrderThenAgainAfterTheRetryInterval() {
        var queue = queue(adding: 3)
        #expect(ids(queue.due(now: 10, retryAfter: retry)) == [1, 2, 3])
        #expect(queue.due(now: 20, retryAfter: retry).isEmpty)
        _ = queue.add(kind: .event, codec: .json, version: 1, address: "counter/a", payload: [], waiter: .effect, now: 30)
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
        _ = queue.add(kind: .event, codec: .json, version: 1, address: "counter/a", payload: [], waiter: .effect, now: 0)
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

    @Test func anAckSettlesOrderedAndDuplicateSubmissionsOnce() {
        var queue = queue(adding: 3)
        _ = queue.due(now: 0, retryAfter: retry)
        let outcomes = queue.receive(
            AckMessage(epoch: 2, head: 9, acks: [.init(submission: 1, seq: 8, status: .ordered), .init(submission: 2, seq: 5, status: .duplicate)])
        )
        #expect(outcomes.map(\.summary) == ["1 ordered at 8", "2 ordered at 5"])
        #expect(queue.receive(AckMessage(epoch: 2, head: 9, acks: [.init(submission: 1, seq: 8, status: .ordered)])).isEmpty, "already settled")
        #expect(queue.count == 1)
    }

    @Test func retryableRefusalsStayQueuedAndNameTheReasonWhenTheWaitRunsOut() {
        var queue = SubmissionQueue(capacity: 10)
        let client = RouterEnvelope(identity: [7], delimited: false)
        for request in 1...3 as ClosedRange<UInt64> {
            _ = queue.add(
                kind: .event, codec: .json, version: 1, address: "counter/a", payload: [], waiter: .client(peer: client, request: request, wait: .ordered, deadline: 500),
                now: 0
            )
        }
        _ = queue.due(now: 0, retryAfter: retry)
        let outcomes = queue.receive(
            AckMessage(
                epoch: 1, head: 0,
                acks: [
                    .init(submission: 1, seq: 0, status: .refused, reason: .overloaded),
                    .init(submission: 2, seq: 0, status: .refused, reason: .internalError),
                    .init(submission: 3, seq: 0, status: .refused, reason: .unknownFlow),
                ]
            )
        )
        // Only the refusal for good settles its submission; the others go again.
        #expect(outcomes.map(\.summary) == ["3 refused: unknown flow"])
        #expect(ids(queue.due(now: retry, retryAfter: retry)) == [1, 2])
        let expired = queue.expireWaiters(now: 500, timeout: .seconds(5)).sorted { $0.request < $1.request }
        #expect(expired.map(\.error.code) == [.overloaded, .internalError])
        #expect(expired.allSatisfy { $0.peer == client && $0.error.message.contains("keeps retrying") })
        #expect(queue.count == 2, "sent submissions stay queued: a retry must find them duplicates")
    }

    @Test func aClientWhoseEmitWasNeverSentHearsTheCoordinatorIsUnreachable() {
        var queue = SubmissionQueue(capacity: 10)
        let client = RouterEnvelope(identity: [7], delimited: false)
        _ = queue.add(kind: .event, codec: .json, version: 1, address: "counter/a", payload: [], waiter: .client(peer: client, request: 1, wait: .ordered, deadline: 5), now: 0)
        let expired = queue.expireWaiters(now: 5, timeout: .seconds(5))
        #expect(expired.map(\.error.message) == ["the coordinator is unreachable; the entry was not submitted"])
        #expect(queue.count == 0, "never sent, it can never be ordered")
    }

    @Test func waitersExpireInDeadlineOrderAndAcknowledgedOnesAreSkipped() {
        var queue = SubmissionQueue(capacity: 10)
        let client = RouterEnvelope(identity: [7], delimited: false)
        for (request, deadline) in [(1, 100), (2, 300), (3, 200), (4, 400)] as [(UInt64, UInt64)] {
            _ = queue.add(
                kind: .event, codec: .json, version: 1, address: "counter/a", payload: [],
                waiter: .client(peer: client, request: request, wait: .ordered, deadline: deadline), now: 0
            )
        }
        _ = queue.due(now: 1, retryAfter: retry)
        _ = queue.acknowledge(1)
        #expect(queue.expireWaiters(now: 99, timeout: .seconds(5)).isEmpty)
        #expect(queue.expireWaiters(now: 250, timeout: .seconds(5)).map(\.request) == [3], "1 was acknowledged; 2 is not due")
        #expect(queue.expireWaiters(now: 250, timeout: .seconds(5)).isEmpty, "each waiter is told once")
        #expect(queue.expireWaiters(now: 1_000, timeout: .seconds(5)).map(\.request) == [2, 4])
        #expect(queue.count == 3, "sent submissions stay queued after their waiters are told")
    }
}

extension SubmissionQueue.Outcome {
    var summary: String {
        switch self {
        case .ordered(let pending, let seq): "\(pending.submission.submission) ordered at \(seq)"
        case .refused(let pending, let error): "\(pending.submission.submission) refused: \(error.code)"
        }
    }
}
