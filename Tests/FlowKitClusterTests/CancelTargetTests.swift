@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKit
import Foundation
import Logging
import Synchronization
import Testing

/// Cancel ids mean in the cluster what they mean in one process: a flow's cancel from inside
/// running work stops the effects of that type and value on every replica, and no other; an
/// operator's cancel by text stops every effect whose id reads so.
@Suite struct CancelTargetTests {
    /// Four effects, all named `timer` when read as text, of four types.
    struct TimersFlow: ReplicatedFlow {
        enum First: Hashable, Sendable { case timer }
        enum Second: Hashable, Sendable { case timer }
        struct State: Codable, Equatable, Sendable { var started = 0 }
        enum Event: Codable, Equatable, Sendable {
            case start
            /// Cancels `First.timer` from inside running work, which goes through the order.
            case stopFirstLater
            /// Cancels the private type's `timer` from inside running work.
            case stopPrivateLater
        }

        static var initialState: State { State() }

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .start:
                state.started += 1
                return .merge(
                    Self.forever.cancellable(id: First.timer),
                    Self.forever.cancellable(id: Second.timer),
                    Self.forever.cancellable(id: "timer"),
                    Self.forever.cancellable(id: PrivateID.timer)
                )
            case .stopFirstLater:
                return .concatenate(.run { _ in await Task.yield() }, .cancel(id: First.timer))
            case .stopPrivateLater:
                return .concatenate(.run { _ in await Task.yield() }, .cancel(id: PrivateID.timer))
            }
        }

        static var forever: Effect<Event> { .run { _ in try await Task.sleep(for: .seconds(1_000_000)) } }
    }

    /// What the replicas' effects handed to the order.
    final class Submitted: Sendable {
        let cancels = Mutex<[CancelTarget]>([])
    }

    private func replicas(_ submitted: Submitted) -> ReplicaSet {
        var registry = FlowRegistry()
        registry.register(TimersFlow.self, as: "timers")
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let context = ReplicaContext(
            dependencies: DependencyValues(), logger: logger, owner: EffectOwner(node: 1, session: 1),
            submit: { _, kind, codec, payload, _ in
                guard kind == .cancel, let target = try? CancelTarget(codec: codec, payload: payload) else { return }
                submitted.cancels.withLock { $0.append(target) }
            },
            effectFailed: { _, _ in }
        )
        return ReplicaSet(registry: registry, context: context, logger: logger)
    }

    private func entry(_ seq: UInt64, _ kind: EntryKind, codec: PayloadCodec = .json, _ payload: [UInt8], at address: String = "timers/a") -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: kind, codec: codec, origin: 1, session: 1, submission: seq,
            submittedAt: 0, committedAt: 0, address: address, payload: payload
        )
    }

    private func event(_ seq: UInt64, _ event: TimersFlow.Event, at address: String = "timers/a") throws -> Entry {
        entry(seq, .event, Array(try JSONEncoder().encode(event)), at: address)
    }

    @Test func runningEffectsAreCountedOverTheInstancesThatRunThemNotOverEveryInstance() async throws {
        let replicas = replicas(Submitted())
        // A thousand instances whose effects run elsewhere (this process did not originate them).
        for index in 0..<1_000 { replicas.apply(try event(UInt64(index + 1), .start, at: "timers/idle-\(index)"), runEffects: false) }
        #expect(replicas.runningEffects == 0)
        #expect(replicas.instancesCountedForEffects == 0)
        replicas.apply(try event(1_001, .start), runEffects: true)
        try await eventually("four effects at timers/a") { replicas.runningEffects == 4 }
        #expect(replicas.instancesCountedForEffects == 1)
        replicas.apply(entry(1_002, .cancelAll, []), runEffects: true)
        try await eventually("every effect ended") { replicas.runningEffects == 0 }
        #expect(replicas.instancesCountedForEffects == 0, "an instance whose effects ended is no longer walked")
    }


    /// The types of the cancel ids whose effects run at `timers/a`.
    private func running(_ replicas: ReplicaSet) -> Set<String> {
        let replica = (try? Address(parsing: "timers/a")).flatMap { replicas.replica(at: $0) as? TypedReplica<TimersFlow> }
        return Set(replica?.runningTypedCancelIDs.map(\.typeName) ?? [])
    }

    private let first = String(reflecting: TimersFlow.First.self)
    private let second = String(reflecting: TimersFlow.Second.self)
    private let privateType = "FlowKitClusterTests.(private).PrivateID"

    @Test func aFlowsCancelFromRunningWorkStopsOnlyItsOwnTypeOnEveryReplica() async throws {
        let submitted = Submitted()
        let origin = replicas(submitted)
        let other = replicas(Submitted())
        // The origin runs the effects of its entries; the other replica runs them as if it were
        // the origin too, so that both have the four effects to cancel.
        for replicas in [origin, other] { replicas.apply(try event(1, .start), runEffects: true) }
        let all: Set = [first, second, "Swift.String", privateType]
        try await eventually("four effects on each") { running(origin) == all && running(other) == all }

        origin.apply(try event(2, .stopFirstLater), runEffects: true)
        try await eventually("the cancel handed to the order") { submitted.cancels.withLock { $0.count } == 1 }
        let firstTarget = try #require(submitted.cancels.withLock { $0.first })
        #expect(firstTarget == .typed(type: first, description: "timer"))
        // Only the order's entry cancels: until it is applied, the four run.
        #expect(running(origin) == all)
        for replicas in [origin, other] { replicas.apply(entry(3, .cancel, codec: firstTarget.codec, firstTarget.payload), runEffects: true) }
        try await eventually("First.timer stopped, three left") { running(origin) == all.subtracting([first]) && running(other) == running(origin) }

        origin.apply(try event(4, .stopPrivateLater), runEffects: true)
        try await eventually("the private type's cancel handed to the order") { submitted.cancels.withLock { $0.count } == 2 }
        let privateTarget = try #require(submitted.cancels.withLock { $0.last })
        #expect(privateTarget == .typed(type: privateType, description: "timer"), "no process-specific address in the type")
        for replicas in [origin, other] { replicas.apply(entry(5, .cancel, codec: privateTarget.codec, privateTarget.payload), runEffects: true) }
        try await eventually("the private type's timer stopped, two left") {
            running(origin) == [second, "Swift.String"] && running(other) == running(origin)
        }

        // An operator's cancel by text stops what is left, whatever its type.
        for replicas in [origin, other] { replicas.apply(entry(6, .cancel, Array("timer".utf8)), runEffects: true) }
        try await eventually("every timer stopped") { running(origin).isEmpty && running(other).isEmpty }
        #expect(origin.skippedEntries == 0 && other.skippedEntries == 0)
    }

    /// One process compares the same ids the same way: the string `"timer"` does not cancel
    /// `First.timer`.
    @Test func oneProcessTellsTheSameIdsApart() {
        let ids: [CancelID] = [CancelID(TimersFlow.First.timer), CancelID(TimersFlow.Second.timer), CancelID("timer"), CancelID(PrivateID.timer)]
        for (index, id) in ids.enumerated() {
            let target = CancelTarget(id)
            #expect(ids.filter(target.matches) == [id], "\(target) matches only its own id, as == does")
            #expect(ids.filter { $0 == id }.count == 1 && ids.firstIndex(of: id) == index)
        }
        #expect(ids.allSatisfy(CancelTarget.described("timer").matches))
        #expect(CancelID(PrivateID.timer).typeName == "FlowKitClusterTests.(private).PrivateID")
        #expect(CancelID("timer").typeName == "Swift.String")
    }
}

private enum PrivateID: Hashable, Sendable { case timer }
