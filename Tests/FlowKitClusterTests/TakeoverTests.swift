@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKit
import FlowKitExamples
import Foundation
import Logging
import Synchronization
import Testing

/// Effects outlive their node (docs/EFFECTS.md): every replica learns from the log who may run an
/// instance's effects; a takeover moves them to one owner, which starts what the flow's `resume`
/// derives from the state; the coordinator refuses the old owner's submissions by their term.
@Suite struct TakeoverTests {
    /// A timer that ticks forever, and says in its state when its effects were lost.
    struct BeaconFlow: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable {
            var active = false
            var ticks = 0
            var lost = 0
        }
        enum Event: Codable, Equatable, Sendable { case start, tick, effectsLost, noWork }
        enum CancelID { case beacon }

        static var initialState: State { State() }

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .start:
                state.active = true
                return Self.beacon
            case .tick:
                state.ticks += 1
                return .none
            case .effectsLost:
                state.lost += 1
                return .none
            case .noWork:
                return .none
            }
        }

        /// Sends a tick at once, then waits forever.
        static var beacon: Effect<Event> {
            .run { send in
                await send(.tick)
                try await Task.sleep(for: .seconds(1_000_000))
            }
            .cancellable(id: CancelID.beacon, cancelInFlight: true)
        }

        static func resume(_ state: State) -> Effect<Event> {
            state.active ? .merge(.send(.effectsLost), beacon) : .none
        }
    }

    /// What one process's effects handed to the order: each event with its ownership term.
    final class Submitted: Sendable {
        let events = Mutex<[(event: BeaconFlow.Event, term: UInt64)]>([])
        var terms: [UInt64] { events.withLock { $0.map(\.term) } }
    }

    static let a = EffectOwner(node: 1, session: 0xA)
    static let b = EffectOwner(node: 2, session: 0xB)

    private func replicas(as owner: EffectOwner?, _ submitted: Submitted = Submitted()) -> ReplicaSet {
        var registry = FlowRegistry()
        registry.register(BeaconFlow.self, as: "beacon")
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let context = ReplicaContext(
            dependencies: DependencyValues(), logger: logger, owner: owner,
            submit: { _, _, _, payload, term in
                guard let event = try? JSONDecoder().decode(BeaconFlow.Event.self, from: Data(payload)) else { return }
                submitted.events.withLock { $0.append((event, term)) }
            },
            effectFailed: { _, _ in }
        )
        return ReplicaSet(registry: registry, context: context, logger: logger)
    }

    private func event(_ seq: UInt64, _ event: BeaconFlow.Event, from owner: EffectOwner = a) throws -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, origin: owner.node, session: owner.session, submission: seq,
            submittedAt: 0, committedAt: 0, address: "beacon/x", payload: Array(try JSONEncoder().encode(event))
        )
    }

    private func takeover(_ seq: UInt64, from: EffectOwner, to: EffectOwner) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .takeover, codec: .binary, origin: 0, session: 0, submission: 0, submittedAt: 0, committedAt: 0,
            address: "beacon/x", payload: Takeover(from: from, to: to).payload
        )
    }

    private func replica(_ set: ReplicaSet) throws -> TypedReplica<BeaconFlow> {
        try #require(set.replica(at: try Address(parsing: "beacon/x")) as? TypedReplica<BeaconFlow>)
    }


    @Test func everyReplicaLearnsTheOwnersAndATakeoverMovesTheEffectsToOne() async throws {
        let (atA, atB) = (Submitted(), Submitted())
        let oldOwner = replicas(as: Self.a, atA)
        let newOwner = replicas(as: Self.b, atB)
        let passive = replicas(as: nil)
        for set in [oldOwner, newOwner, passive] {
            set.apply(try event(1, .noWork), runEffects: set === oldOwner)
            #expect(try replica(set).ownership.owners.isEmpty, "an entry without async work makes no owner")
            set.apply(try event(2, .start), runEffects: set === oldOwner)
            #expect(try replica(set).ownership.owners == [Self.a])
            #expect(try replica(set).ownership.workIDs == [.init(CancelTarget(CancelID(BeaconFlow.CancelID.beacon)), owner: Self.a)])
            #expect(set.ownerCounts == [Self.a: 1])
            #expect(set.instances(ownedBy: Self.a) == ["beacon/x"])
        }
        try await eventually("the beacon runs at its origin") { oldOwner.runningEffects == 1 && atA.terms == [2] }
        #expect(newOwner.runningEffects == 0 && passive.runningEffects == 0)

        // Node 1 went down (or was paused past its lease): its effects move to node 2.
        for set in [oldOwner, newOwner, passive] {
            set.apply(takeover(3, from: Self.a, to: Self.b), runEffects: false)
            let moved = try replica(set)
            #expect(moved.ownership == .init(owners: [Self.b], fence: 3, workIDs: [.init(CancelTarget(CancelID(BeaconFlow.CancelID.beacon)), owner: Self.b)]))
            #expect(moved.state == BeaconFlow.State(active: true, ticks: 0, lost: 1), "what resume sends is reduced everywhere")
            #expect(set.ownerCounts == [Self.b: 1])
        }
        try await eventually("the old owner stops what it ran") { oldOwner.runningEffects == 0 }
        try await eventually("the beacon runs at the new owner, under the takeover's term") { newOwner.runningEffects == 1 && atB.terms == [3] }
        #expect(passive.runningEffects == 0)
        #expect(atA.terms == [2], "nothing more from the old owner")

        // A cancel of every effect leaves no owner: nothing to take over.
        for set in [oldOwner, newOwner, passive] {
            set.apply(Entry(seq: 4, epoch: 1, kind: .cancelAll, codec: .json, origin: 1, session: 0xA, submission: 4, submittedAt: 0, committedAt: 0, address: "beacon/x", payload: []), runEffects: false)
            #expect(try replica(set).ownership == .init(owners: [], fence: 3, workIDs: []))
            #expect(set.ownerCounts.isEmpty)
        }
        try await eventually("the cancel stops the beacon") { newOwner.runningEffects == 0 }
    }

    /// An operator's cancel (by text, as `flowkit cancel` sends it) stops the beacon without the
    /// reducer: the state still says it is active, but a takeover does not start it again.
    @Test func aCancelledEffectIsNeverTakenOver() async throws {
        let atB = Submitted()
        let newOwner = replicas(as: Self.b, atB)
        let passive = replicas(as: nil)
        for set in [newOwner, passive] {
            set.apply(try event(1, .start), runEffects: false)
            let cancel = CancelTarget.described("beacon")
            set.apply(
                Entry(seq: 2, epoch: 1, kind: .cancel, codec: cancel.codec, origin: 3, session: 3, submission: 1, submittedAt: 0, committedAt: 0, address: "beacon/x", payload: cancel.payload),
                runEffects: false
            )
            #expect(try replica(set).ownership.workIDs.isEmpty)
            #expect(try replica(set).ownership.owners == [Self.a], "node 1 may still run effects without an id")
            set.apply(takeover(3, from: Self.a, to: Self.b), runEffects: false)
            let moved = try replica(set)
            #expect(moved.ownership == .init(owners: [], fence: 3, workIDs: []), "nothing resumed, nothing owned")
            #expect(moved.state.lost == 1, "what resume sends outside the cancelled part is still reduced")
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(newOwner.runningEffects == 0 && atB.terms.isEmpty)
    }

    @Test func aSnapshotCarriesTheOwnersAndTheFence() throws {
        let source = replicas(as: nil)
        source.apply(try event(1, .start), runEffects: false)
        source.apply(takeover(2, from: Self.a, to: Self.b), runEffects: false)
        let expected = SnapshotChunkMessage.Ownership(owners: [Self.b], fence: 2, workIDs: [.init(CancelTarget(CancelID(BeaconFlow.CancelID.beacon)), owner: Self.b)])
        #expect(try replica(source).ownership == expected)
        let bytes = SnapshotCodec.encode(source.exportStates())
        let restored = replicas(as: nil)
        try restored.importStates(try SnapshotCodec.decode(bytes).instances)
        #expect(try replica(restored).ownership == expected)
        #expect(restored.ownerCounts == [Self.b: 1])
        #expect(restored.fences == ["beacon/x": 2])
        // A record written before takeovers existed has no ownership block: no owners, no fence.
        let old = ByteWriter.testRecord(address: "beacon/x", lastSeq: 1, state: Array(#"{"active":true,"lost":0,"ticks":0}"#.utf8))
        let instances = try SnapshotCodec.decode(old).instances
        #expect(instances.map(\.ownership) == [.init()])
    }

    /// The coordinator's intake: an effect's submission under a term its instance's takeover ended
    /// is refused; a newer term, and a client's (term 0), are not.
    @Test func theIntakeRefusesTheOldOwnersSubmissionsByTerm() throws {
        var registry = FlowRegistry()
        registry.register(BeaconFlow.self, as: "beacon")
        var intake = SubmissionIntake(
            sequencer: Sequencer(epoch: 1, durableHead: 10), admission: Admission(registry: registry, limits: AdmissionLimits()),
            maxPendingEntries: 100, fences: ["beacon/y": 4]
        )
        let takeover = intake.orderTakeover(Takeover(from: Self.a, to: Self.b), of: "beacon/x", now: 1)
        #expect(takeover.seq == 11 && takeover.kind == .takeover && takeover.origin == 0)
        let tick = Array(try JSONEncoder().encode(BeaconFlow.Event.tick))
        func submission(_ id: UInt64, term: UInt64, address: String = "beacon/x") -> Submission {
            Submission(submission: id, kind: .event, codec: .json, submittedAt: 0, term: term, address: address, payload: tick)
        }
        var answers = SubmissionIntake.Answers()
        let peer = RouterEnvelope(identity: [1], delimited: false)
        intake.take(
            SubmitMessage(origin: 1, session: 0xA, submissions: [
                submission(1, term: 2), submission(2, term: 11), submission(3, term: 0), submission(4, term: 3, address: "beacon/y"),
            ]),
            from: peer, now: 2, answers: &answers
        )
        #expect(answers.refusals.map(\.code) == [.staleOwner, .staleOwner])
        #expect(answers.immediate.byPeer.first?.acks.map(\.submission) == [1, 4])
        let taken = intake.takeGroup()
        let group = try #require(taken)
        #expect(group.entries.map(\.seq) == [11, 12, 13])
        // The log refuses the group: the takeover never happened, and neither did its fence.
        _ = intake.failed(group, error: CancellationError(), now: 3)
        #expect(intake.fences == ["beacon/y": 4])
    }

    @Test func aDownOwnersInstancesSpreadOverTheLiveHostsOfTheirFlow() {
        var planner = TakeoverPlanner()
        let c = EffectOwner(node: 3, session: 0xC)
        let addresses = (0..<40).map { "beacon/k\($0)" } + ["other/z"]
        let ownership = EffectOwnership(applied: 100, counts: [Self.a: addresses.count, Self.b: 3], orphaned: [Self.a: addresses])
        let live: [(owner: EffectOwner, flows: [String])] = [(Self.b, ["beacon"]), (c, ["beacon"])]

        let early = planner.plan(ownership, live: live, lastSeq: { _ in 90 }, mayAct: false)
        #expect(early.moves.isEmpty, "not before every live node could say hello to this leader")
        let behind = planner.plan(ownership, live: live, lastSeq: { _ in 101 }, mayAct: true)
        #expect(behind.moves.isEmpty, "not before the replica applied everything the owner submitted")

        let plan = planner.plan(ownership, live: live, lastSeq: { _ in 90 }, mayAct: true)
        let moves = try! #require(plan.moves.first { $0.from == Self.a }).moves
        #expect(moves.count == 40)
        #expect(Set(moves.map(\.to)) == [Self.b, c], "spread by address over both hosts")
        #expect(plan.stranded.map(\.addresses) == [["other/z"]], "no live node runs flow other")
        planner.ordered(moves.count, for: Self.a, lastSeq: 140)
        #expect(planner.takenOver == 40)

        let again = planner.plan(ownership, live: live, lastSeq: { _ in 90 }, mayAct: true)
        #expect(again.moves.isEmpty, "not again until the replica applied the takeovers")
        #expect(again.stranded.isEmpty, "a stranded owner is alarmed once")
        var later = ownership
        later.applied = 140
        let retried = planner.plan(later, live: live, lastSeq: { _ in 90 }, mayAct: true)
        #expect(retried.moves.first?.moves.count == 40, "still owned once applied: planned again")
        let liveAgain = planner.plan(later, live: live + [(Self.a, ["beacon"])], lastSeq: { _ in 90 }, mayAct: true)
        #expect(liveAgain.moves.isEmpty, "a live owner keeps its effects")
    }

    /// The coordinator looks at once, not at the next status interval, when an owner that was live
    /// at the last plan no longer is; and only once for it.
    @Test func anOwnerThatLapsedSinceTheLastPlanIsSeenAtOnce() {
        var planner = TakeoverPlanner()
        let ownership = EffectOwnership(applied: 100, counts: [Self.a: 2, Self.b: 1])
        _ = planner.plan(ownership, live: [(Self.a, ["beacon"]), (Self.b, ["beacon"])], lastSeq: { _ in 90 }, mayAct: true)
        #expect(!planner.lapsed(live: [Self.a, Self.b]))
        #expect(planner.lapsed(live: [Self.b]), "a went away since the plan")
        _ = planner.plan(ownership, live: [(Self.b, ["beacon"])], lastSeq: { _ in 90 }, mayAct: false)
        #expect(!planner.lapsed(live: [Self.b]), "seen by a plan: the next status interval retries")
        #expect(!planner.lapsed(live: [Self.b, EffectOwner(node: 9, session: 9)]), "a process that owns nothing is no reason")
    }
}

extension ByteWriter {
    /// A snapshot record as written before takeovers existed: address, last seq, state.
    static func testRecord(address: String, lastSeq: UInt64, state: [UInt8]) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.writeLengthPrefixed { record in
            record.writeShortString(address)
            record.write(lastSeq)
            record.write(contentsOf: state)
        }
        return writer.bytes
    }
}
