import FlowKitCore
import Synchronization
import ZeroMQ

/// A coordinator's role now: the ordering core while it leads, the standby's copy otherwise (a
/// coordinator alone leads for good). The submit socket's handler asks it, in the loop turn that
/// read a batch, which core orders it; the sync socket serves from whichever it is.
final class CoordinatorRole: SyncSource {
    let replica: CoordinatorReplica
    private let standby: CoordinatorStandby?
    private let state = Mutex(State())

    private struct State {
        var core: CoordinatorCore?
        var reports: Task<Void, Never>?
        /// The leader this coordinator follows, if any.
        var leader: LeaderRecord?
        /// The last leader this coordinator followed: when it takes over, the deposed one.
        var lastLeader: LeaderRecord?
    }

    init(replica: CoordinatorReplica, standby: CoordinatorStandby?) {
        self.replica = replica
        self.standby = standby
    }

    /// The core that orders, while this coordinator leads.
    var core: CoordinatorCore? { state.withLock { $0.core } }
    var lastLeader: LeaderRecord? { state.withLock { $0.lastLeader } }

    func lead(_ core: CoordinatorCore, record: LeaderRecord) {
        let reports = Task { await core.receiveReports() }
        state.withLock { state in
            state.core = core
            state.leader = record
            state.reports = reports
        }
    }

    func follow(_ leader: LeaderRecord?) async {
        // At once: a SUBMIT read meanwhile is redirected to this leader, not ordered by the old core.
        let stepsDown = state.withLock { state in
            defer {
                state.core = nil
                state.leader = leader
                if let leader { state.lastLeader = leader }
                state.reports?.cancel()
                state.reports = nil
            }
            return state.core
        }
        if let stepsDown {
            // It wrote its own log while it led: the copy goes on from there, not from before.
            await standby?.resumeAfterLeading(committed: await stepsDown.retire().head)
        }
        await standby?.follow(leader)
    }

    /// Stops the report reader of the core, on shutdown.
    func stop() {
        state.withLock { $0.reports?.cancel() }
    }

    /// Orders a batch read from the submit socket, on the loop's thread (the cores' executor);
    /// while this coordinator does not lead, answers its SUBMITs and HELLOs with NOT_LEADER.
    func order(_ batch: [Message], redirectingOn socket: AsyncSocket) {
        // A core that stepped down meanwhile does not take it (see CoordinatorCore.retire()).
        if let core, core.assumeIsolated({ $0.handleSubmitBatch(batch) }) { return }
        redirect(batch, on: socket)
    }

    /// Answers the SUBMITs and HELLOs of a batch this coordinator will not order with NOT_LEADER,
    /// naming the leader (or no one, yet).
    func redirect(_ batch: [Message], on socket: AsyncSocket) {
        for reply in Self.redirections(batch, leader: state.withLock { $0.leader }) {
            _ = try? socket.trySend(reply)
        }
    }

    func committed() async -> (head: UInt64, epoch: UInt32) {
        if let core { return await core.committed() }
        return (await standby?.committed ?? 0, state.withLock { $0.leader?.epoch } ?? 0)
    }

    func fetch(_ request: FetchRequest) async throws -> (answer: FetchAnswer, committed: UInt64, epoch: UInt32) {
        guard let core else {
            let leader = state.withLock { $0.leader }
            throw ProtocolError(.coordinatorUnavailable, "this coordinator does not lead; \(leader.map { "\($0) does" } ?? "no leader is known yet")")
        }
        return try await core.fetch(request)
    }

    /// The NOT_LEADER replies a coordinator that does not lead sends to the SUBMITs and HELLOs in
    /// `batch`; reports and anything else go unanswered.
    static func redirections(_ batch: [Message], leader: LeaderRecord?) -> [Message] {
        let answer = NotLeaderMessage(
            epoch: leader?.epoch ?? 0, id: leader?.id ?? "",
            endpoints: leader?.endpoints ?? CoordinatorEndpoints(submit: "", publish: "", sync: "")
        )
        return batch.compactMap { message in
            guard let (peer, body) = RouterEnvelope.split(message), let first = body.first,
                let type = (try? WireHeader.read(first, expecting: .submit, .hello, .nodeReport))?.0, type != .nodeReport
            else { return nil }
            return peer.reply(answer.frames)
        }
    }
}
