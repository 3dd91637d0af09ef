import FlowKitCore
import ZeroMQ

/// A coordinator process's I/O: its submit and publish sockets, its log (written on the ordering
/// thread: a group is durable when ``write(_:)`` returns), its replica and its election.
final class CoordinatorProcessIO: CoordinatorIO {
    let configuration: CoordinatorConfiguration
    let counters: ClusterCounters
    let writer: LogWriter
    let submitSocket: AsyncSocket
    let publishSocket: AsyncSocket
    let writeEligible: (@Sendable (Set<String>) async -> Bool)?
    let mayActNow: @Sendable () -> Bool
    let replicateEntries: @Sendable ([Entry]) -> Void
    let written: AsyncStream<Void>.Continuation?
    let feed: ReplicationFeed?
    let stepDownNow: @Sendable (String) -> Void
    let reportIntake: AsyncStream<(RouterEnvelope, [[UInt8]])>.Continuation
    /// Where the election service's answers go back to.
    weak var core: CoordinatorCore?
    /// Set when the coordinator stepped down (``CoordinatorCore/retire()``): it orders and writes
    /// nothing more; its log belongs to the standby.
    var isRetired = false
    /// When the last write started, for the hop trace.
    private var writeStarted: (clock: ContinuousClock.Instant, micros: UInt64)?

    init(
        configuration: CoordinatorConfiguration, counters: ClusterCounters, writer: LogWriter, submitSocket: AsyncSocket, publishSocket: AsyncSocket,
        writeEligible: (@Sendable (Set<String>) async -> Bool)?, mayAct: @escaping @Sendable () -> Bool,
        replicate: @escaping @Sendable ([Entry]) -> Void, written: AsyncStream<Void>.Continuation?, feed: ReplicationFeed?,
        stepDown: @escaping @Sendable (String) -> Void, reportIntake: AsyncStream<(RouterEnvelope, [[UInt8]])>.Continuation
    ) {
        self.configuration = configuration
        self.counters = counters
        self.writer = writer
        self.submitSocket = submitSocket
        self.publishSocket = publishSocket
        self.writeEligible = writeEligible
        self.mayActNow = mayAct
        self.replicateEntries = replicate
        self.written = written
        self.feed = feed
        self.stepDownNow = stepDown
        self.reportIntake = reportIntake
    }

    var now: UInt64 { WallClock.micros() }

    func mayAct() -> Bool { mayActNow() }

    func reply(_ frames: [[UInt8]], to peer: RouterEnvelope) -> Bool {
        (try? submitSocket.trySend(peer.reply(frames))) == true
    }

    func publish(_ frames: [[UInt8]]) -> Bool {
        (try? publishSocket.trySend(Message(parts: frames))) == true
    }

    /// Makes a group durable now, on this thread.
    ///
    /// Replicated, the group goes to the standbys between the append and the sync: the sync
    /// server sends it from the feed while this thread waits in `fdatasync`, so the leader's sync
    /// and the standbys' overlap, as a Raft leader's and its followers' do. The commit still
    /// waits for both. A sync that fails after that is a ``LeaderSyncFailed``.
    func write(_ group: PendingCommit) -> CoordinatorWrite {
        // A retired core's log belongs to the standby: the group is never written, nor answered.
        guard !isRetired else { return .pending }
        let records = group.records
        let started = (ContinuousClock.now, configuration.trace == nil ? 0 : WallClock.micros())
        do {
            try writer.runHere { log in try log.append(records) }
        } catch {
            return .finished(.failure(error))
        }
        if let feed, let first = records.first?.seq {
            feed.append(records.map(\.record), from: first)
            written?.yield()
        }
        do {
            try writer.runHere { log in try log.commit() }
        } catch {
            return .finished(.failure(feed == nil ? error : LeaderSyncFailed(cause: error)))
        }
        counters.recordCommit(entries: records.count, duration: ContinuousClock.now - started.0)
        writeStarted = started
        return .finished(.success(()))
    }

    func madeDurable(_ group: PendingCommit) {
        guard let trace = configuration.trace, let startedAt = writeStarted?.micros else { return }
        let committedAt = WallClock.micros()
        for entry in group.entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .coordinatorCommitStarted, at: startedAt)
            trace.note(entry.seq, .coordinatorCommitted, at: committedAt)
        }
    }

    func acknowledged(_ entries: [Entry]) {
        guard let trace = configuration.trace else { return }
        let publishedAt = WallClock.micros()
        for entry in entries where trace.samples(entry.seq) {
            trace.note(entry.seq, .coordinatorAcknowledged, at: publishedAt)
            trace.note(entry.seq, .coordinatorPublished, at: publishedAt)
        }
    }

    func replicate(_ entries: [Entry]) {
        replicateEntries(entries)
    }

    func queueReport(_ body: [[UInt8]], from peer: RouterEnvelope) -> RouterEnvelope? {
        if case .dropped(let (oldest, _)) = reportIntake.yield((peer, body)) { return oldest }
        return nil
    }

    func compare(_ digests: [ReportedDigest], reporter: String) {
        core?.compareInBackground(digests, reporter: reporter)
    }

    func stepDown(_ reason: String) {
        isRetired = true
        stepDownNow(reason)
    }

    func proposeEligible(_ set: Set<String>) -> Bool {
        guard let writeEligible else { return false }
        Task { [weak core] in
            let written = await writeEligible(set)
            await core?.eligibleWritten(set, written: written)
        }
        return true
    }
}
