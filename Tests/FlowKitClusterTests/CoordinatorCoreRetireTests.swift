@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitExamples
import Logging
import Testing
import ZeroMQ

/// A replicated coordinator that steps down hands its log to its standby: its ordering core must
/// write nothing after that, even a SUBMIT batch read just before the step-down that reaches the
/// core just after it (the submit task took the core first). Real sockets on loopback, an
/// in-memory log.
@Suite struct CoordinatorCoreRetireTests {
    let node = RouterEnvelope(identity: [1, 2, 3], delimited: false)

    func submit(_ ids: ClosedRange<UInt64>) -> Message {
        let submissions = ids.map {
            Submission(submission: $0, kind: .event, codec: .json, submittedAt: 0, address: "counter/a", payload: Array(#"{"increment":{}}"#.utf8))
        }
        return Message(parts: [node.identity] + SubmitMessage(origin: 1, session: 7, submissions: submissions).frames)
    }

    @Test func aRetiredCoreOrdersAndWritesNothingMore() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let context = try ZMQContext()
        let loop = try IOLoop(context: context, name: "retire-test", logger: logger)
        let (submitSocket, _) = try await loop.open(.router) { try $0.bind("tcp://127.0.0.1:*") }
        let (publishSocket, _) = try await loop.open(.pub) { try $0.bind("tcp://127.0.0.1:*") }
        var registry = FlowRegistry()
        registry.register(CounterFlow.self, as: "counter")
        let machine = CoordinatorMachine(
            configuration: CoordinatorConfiguration(),
            registry: registry,
            sequencer: Sequencer(epoch: 5, durableHead: 0),
            firstSeq: 1,
            now: 0,
            replication: ReplicationProgress(
                leader: "c1", members: ["c1", "c2", "c3"], eligible: ["c1", "c2", "c3"], written: 0, committed: 0,
                minInSync: 2, lagTimeout: 1_000_000, now: 0
            )
        )
        let writer = LogWriter(log: MemoryEntryLog())
        let core = CoordinatorCore(
            machine: machine, logger: logger, counters: ClusterCounters(), writer: writer, submitSocket: submitSocket, publishSocket: publishSocket,
            replica: CoordinatorReplica(registry: registry, applied: 0, logger: logger),
            replication: .init(
                writeEligible: { _ in true }, mayAct: { true }, replicate: { _ in }, written: AsyncStream.makeStream(of: Void.self).continuation,
                feed: ReplicationFeed(), stepDown: { reason in Issue.record("stepped down: \(reason)") }
            )
        )

        // Leading: a batch is ordered and written (the standbys have not confirmed it yet).
        let info = NodeInfo(name: "node-1", clientEndpoint: "tcp://127.0.0.1:1", flows: ["counter"], pid: 1)
        let hello = Message(parts: [node.identity] + HelloMessage(node: 1, session: 7, info: info).frames)
        #expect(await core.handleSubmitBatch([hello, submit(1...3)]))
        #expect(try await writer.run { $0.lastSeq } == 3)
        let committed = await core.retire()
        #expect(committed.head == 0 && committed.epoch == 5)
        // Stepped down: the next batch is not taken, and the log is as the standby found it.
        #expect(await core.handleSubmitBatch([submit(4...6)]) == false)
        #expect(try await writer.run { $0.lastSeq } == 3)

        await submitSocket.close(linger: .zero)
        await publishSocket.close(linger: .zero)
        await loop.shutdown(linger: .zero)
        await context.terminate()
    }
}
