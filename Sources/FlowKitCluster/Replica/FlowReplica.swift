import FlowKitCore
import Foundation
import Logging

/// What a replica needs from the process that hosts it.
struct ReplicaContext: Sendable {
    /// The dependencies effects see.
    var dependencies: DependencyValues
    var logger: Logger
    /// Hands an event or cancel, sent by an effect running here, to the order.
    var submit: @Sendable (_ address: Address, _ kind: EntryKind, _ codec: PayloadCodec, _ payload: [UInt8]) async -> Void
    /// An effect threw without a `catch:` handler.
    var effectFailed: @Sendable (_ address: Address, _ failure: EffectFailure) -> Void

    /// A context for replicas that never run effects: the coordinator's, a monitor's.
    static func passive(logger: Logger) -> ReplicaContext {
        ReplicaContext(
            dependencies: DependencyValues(),
            logger: logger,
            submit: { _, _, _, _ in },
            effectFailed: { _, _ in }
        )
    }
}

/// One flow instance held by a node or the coordinator, driven entry by entry in seq order.
///
/// Not thread-safe: the owner applies entries one at a time from its own serial context.
protocol FlowReplica: AnyObject {
    var address: Address { get }
    /// The seq of the last entry applied to this instance; 0 before the first.
    var lastSeq: UInt64 { get }
    /// Whether the instance changed since a hash of its state last began: a flag on the replica
    /// itself, so marking costs no hashing per entry.
    var isUndigested: Bool { get set }
    var runningEffects: Int { get }
    /// The cancel ids of the effects running now (their descriptions, as a cancel entry names them).
    var runningCancelIDs: Set<String> { get }

    /// Applies an ordered entry. Effects run only when `runEffects` (this process is the origin).
    ///
    /// - Throws: ``ProtocolError`` when the payload does not decode: the entry is then skipped by
    ///   every replica alike, so they stay equal.
    func apply(_ entry: Entry, runEffects: Bool) throws

    func stateJSON() throws -> [UInt8]
    /// The state as JSON, to encode elsewhere (the state is a copy).
    func stateJSONJob() -> @Sendable () throws -> [UInt8]
    func restore(stateJSON: [UInt8], lastSeq: UInt64) throws
    func digest() throws -> StateDigest
    /// The digest of the state as it is now, to compute elsewhere (the state is a copy).
    func digestJob() -> @Sendable () throws -> StateDigest
    /// Stops every effect; the replica is being dropped.
    func shutDown()
}

final class TypedReplica<F: Flow>: FlowReplica where F.State: Codable, F.Event: Codable {
    let address: Address
    private let registration: TypedFlowRegistration<F>
    private let instance: FlowInstance<F>
    private(set) var lastSeq: UInt64 = 0
    var isUndigested = false
    private let sampler: DeterminismSampler?
    private let logger: Logger

    /// - Parameters:
    ///   - dependencies: What the flow's reducers and effects see
    ///     (``TypedFlowRegistration/replicaDependencies(from:)``, made once per flow and process).
    ///   - sampler: Checks the flow's first entries in this process for a reducer that reads
    ///     something it should not (shared by the flow's instances).
    init(
        registration: TypedFlowRegistration<F>, address: Address, context: ReplicaContext, dependencies: DependencyValues? = nil,
        sampler: DeterminismSampler? = nil
    ) {
        self.sampler = sampler
        self.logger = context.logger
        self.address = address
        self.registration = registration
        let codecs = registration.codecs
        let runtime = EffectRuntime<F.Event>(
            deliver: { event, _ in
                await context.submit(address, .event, codecs.wire, codecs.encode(event))
            },
            reportFailure: { failure in
                context.logger.error(
                    "effect failed without a catch: handler",
                    metadata: ["flowkit.address": "\(address)", "flowkit.effect.error": "\(failure)"]
                )
                context.effectFailed(address, failure)
            },
            cancelFromTask: { ids in
                // A cancel reached inside running work goes through the order like any other, so
                // that every replica cancels its effects with that id too: by type and value, as
                // one process compares ids.
                for id in ids {
                    let target = CancelTarget(id)
                    await context.submit(address, .cancel, target.codec, target.payload)
                }
            }
        )
        let dependencies = dependencies ?? registration.replicaDependencies(from: context.dependencies)
        let flow = withDependencies { $0 = dependencies } operation: { registration.makeFlow() }
        instance = FlowInstance(flow: flow, state: registration.initialState(address.key), dependencies: dependencies, runtime: runtime)
    }

    var runningEffects: Int { instance.runtime.runningCount }
    var runningCancelIDs: Set<String> { Set(instance.runtime.activeCancelIDs.map(\.description)) }
    /// The cancel ids of the effects running now, with their types.
    var runningTypedCancelIDs: Set<CancelID> { instance.runtime.activeCancelIDs }

    /// The instance's state.
    var state: F.State { instance.state }

    func apply(_ entry: Entry, runEffects: Bool) throws {
        defer { lastSeq = entry.seq }
        switch entry.kind {
        case .event:
            let event = try registration.codecs.decode(entry.payload, codec: entry.codec)
            let stamp = EntryStamp(seq: entry.seq, epoch: entry.epoch, committedAt: entry.committedAt)
            if let sampler, sampler.takesSample() { check(event, stamp: stamp, seq: entry.seq, sampler: sampler) }
            instance.apply(event, stamp: stamp, mode: runEffects ? .origin : .replica)
        case .cancel:
            let target = try CancelTarget(codec: entry.codec, payload: entry.payload)
            instance.runtime.cancel(where: target.matches)
        case .cancelAll:
            instance.runtime.cancelAll()
        case .quarantined:
            break  // ReplicaSet skips these before they reach an instance
        }
    }

    /// Reduces the entry twice from the current state, as a test store does for every event: two
    /// states mean a reducer that reads `Date()`, `UUID()`, a random number or a global, which no
    /// replica can reproduce. Said once per flow, with its name, before the divergence alarm.
    private func check(_ event: F.Event, stamp: EntryStamp, seq: UInt64, sampler: DeterminismSampler) {
        let (first, second) = instance.reduceTwice(event, stamp: stamp)
        guard (try? StateDigest(of: first)) != (try? StateDigest(of: second)) else { return }
        sampler.remaining = 0
        logger.critical(
            "NONDETERMINISTIC REDUCER: flow \(registration.name) gave two states for the same entry: it reads something other than its state, its event and its dependencies (Date(), UUID(), a random number, a global); replicas of it will diverge. Read @Dependency(\\.date), \\.uuid, \\.withRandomNumberGenerator instead",
            metadata: ["flowkit.address": "\(address)", "flowkit.seq": "\(seq)"]
        )
    }

    func stateJSON() throws -> [UInt8] {
        try stateJSONJob()()
    }

    func stateJSONJob() -> @Sendable () throws -> [UInt8] {
        let state = instance.state
        return {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return Array(try encoder.encode(state))
        }
    }

    func restore(stateJSON: [UInt8], lastSeq: UInt64) throws {
        do {
            instance.restore(try JSONDecoder().decode(F.State.self, from: Data(stateJSON)))
        } catch {
            throw ProtocolError(.malformed, "the snapshot state of \(address) does not decode: \(error)")
        }
        self.lastSeq = lastSeq
    }

    func digest() throws -> StateDigest {
        try StateDigest(of: instance.state)
    }

    func digestJob() -> @Sendable () throws -> StateDigest {
        let state = instance.state
        return { try StateDigest(of: state) }
    }

    func shutDown() {
        instance.runtime.shutDown()
    }
}

extension RegisteredFlow {
    /// Makes the replica of one instance of the registered flow, at its initial state.
    func makeReplica(address: Address, context: ReplicaContext, dependencies: DependencyValues, sampler: DeterminismSampler) -> any FlowReplica {
        TypedReplica<Registered>(registration: typed, address: address, context: context, dependencies: dependencies, sampler: sampler)
    }

    func replicaDependencies(from base: DependencyValues) -> DependencyValues {
        typed.replicaDependencies(from: base)
    }
}

extension TypedFlowRegistration {
    /// What a replica's reducers and effects see: the process's dependencies (`base`), with `uuid`,
    /// `date`, random numbers and the clocks' `now` derived from the entry inside reducers (the
    /// same on every replica; effects, which run once, keep the process's values), then the
    /// registration's own overrides.
    func replicaDependencies(from base: DependencyValues) -> DependencyValues {
        withDependencies {
            $0 = base
            $0.deriveReducerValuesFromEntries()
            prepareDependencies(&$0)
        } operation: {
            DependencyValues._current
        }
    }
}

/// How many of a flow's entries a process still reduces twice to check its reducer (the first
/// 16), shared by the flow's instances in one replica set: a cost at start, none after.
final class DeterminismSampler {
    var remaining = 16

    func takesSample() -> Bool {
        guard remaining > 0 else { return false }
        remaining -= 1
        return true
    }
}
