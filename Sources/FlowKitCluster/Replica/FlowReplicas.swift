import FlowKitCore
import Foundation
import Logging

/// What every replica of one flow in one set shares: the registration, what its reducers and
/// effects see, the process, the first entries' check. One per flow and process, so an instance
/// holds one reference to it instead of a copy of each.
final class FlowReplicas<F: Flow> where F.State: Codable, F.Event: Codable {
    let registration: TypedFlowRegistration<F>
    let context: ReplicaContext
    let dependencies: DependencyValues
    /// The flow, built once inside `dependencies` (its `@Dependency` properties carry their values).
    let flow: F
    /// The draws of the entry being reduced: the set applies one entry at a time, so its instances
    /// share one.
    let entropy = EntryEntropy()
    /// Checks the flow's first entries in this process for a reducer that reads something it
    /// should not.
    let sampler: DeterminismSampler?
    /// The owners of every instance of the set, counted.
    let owned: OwnedEffects?
    /// Decodes restored states on first use, on the set's thread (``TypedReplica``).
    private(set) lazy var stateDecoder = JSONDecoder()

    /// - Parameter dependencies: What the flow's reducers and effects see; by default
    ///   ``TypedFlowRegistration/replicaDependencies(from:)`` of the context's.
    init(
        registration: TypedFlowRegistration<F>, context: ReplicaContext, dependencies: DependencyValues? = nil,
        sampler: DeterminismSampler? = nil, owned: OwnedEffects? = nil
    ) {
        self.registration = registration
        self.context = context
        let dependencies = dependencies ?? registration.replicaDependencies(from: context.dependencies)
        self.dependencies = dependencies
        flow = withDependencies { $0 = dependencies } operation: { registration.makeFlow() }
        self.sampler = sampler
        self.owned = owned
    }

    /// The runtime of an instance whose first effect starts: until then it holds none.
    func makeRuntime(for address: Address) -> EffectRuntime<F.Event> {
        let context = context
        let codecs = registration.codecs
        return EffectRuntime<F.Event>(
            deliver: { event, group in
                await context.submit(address, .event, codecs.wire, codecs.encode(event), group.term)
            },
            reportFailure: { failure in
                context.logger.error(
                    "effect failed without a catch: handler",
                    metadata: ["flowkit.address": "\(address)", "flowkit.effect.error": "\(failure)"]
                )
                context.effectFailed(address, failure)
            },
            cancelFromTask: { ids, group in
                // A cancel reached inside running work goes through the order like any other, so
                // that every replica cancels its effects with that id too: by type and value, as
                // one process compares ids.
                for id in ids {
                    let target = CancelTarget(id)
                    await context.submit(address, .cancel, target.codec, target.payload, group.term)
                }
            }
        )
    }
}

/// Makes the replicas of one flow in one set, whatever the flow's type.
protocol ReplicaMaker: AnyObject {
    /// The replica of one instance, at its initial state.
    func makeReplica(at address: Address) -> any FlowReplica
    /// The digest of a state as a snapshot encodes it, to compute elsewhere.
    func digestJob(stateJSON: [UInt8]) -> @Sendable () throws -> StateDigest
}

extension FlowReplicas: ReplicaMaker {
    func makeReplica(at address: Address) -> any FlowReplica {
        TypedReplica(address: address, flow: self)
    }

    func digestJob(stateJSON: [UInt8]) -> @Sendable () throws -> StateDigest {
        { try StateDigest(of: JSONDecoder().decode(F.State.self, from: Data(stateJSON))) }
    }
}

extension RegisteredFlow {
    /// What the registered flow's replicas in one set share, and makes them.
    func replicas(context: ReplicaContext, owned: OwnedEffects) -> any ReplicaMaker {
        FlowReplicas<Registered>(registration: typed, context: context, sampler: DeterminismSampler(), owned: owned)
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
