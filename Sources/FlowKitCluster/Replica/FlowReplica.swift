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

    init(registration: TypedFlowRegistration<F>, address: Address, context: ReplicaContext) {
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
                // that every replica cancels its effects with that id too.
                for id in ids { await context.submit(address, .cancel, .json, Array(id.description.utf8)) }
            }
        )
        let flow = withDependencies { $0 = context.dependencies } operation: { registration.makeFlow() }
        instance = FlowInstance(
            flow: flow,
            state: registration.initialState(address.key),
            dependencies: context.dependencies,
            runtime: runtime
        )
    }

    var runningEffects: Int { instance.runtime.runningCount }
    var runningCancelIDs: Set<String> { Set(instance.runtime.activeCancelIDs.map(\.description)) }

    /// The instance's state.
    var state: F.State { instance.state }

    func apply(_ entry: Entry, runEffects: Bool) throws {
        defer { lastSeq = entry.seq }
        switch entry.kind {
        case .event:
            let event = try registration.codecs.decode(entry.payload, codec: entry.codec)
            instance.apply(event, mode: runEffects ? .origin : .replica)
        case .cancel:
            let name = String(decoding: entry.payload, as: UTF8.self)
            instance.runtime.cancel { $0.description == name }
        case .cancelAll:
            instance.runtime.cancelAll()
        case .quarantined:
            break  // ReplicaSet skips these before they reach an instance
        }
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
    func makeReplica(address: Address, context: ReplicaContext) -> any FlowReplica {
        TypedReplica<Registered>(registration: typed, address: address, context: context)
    }
}
