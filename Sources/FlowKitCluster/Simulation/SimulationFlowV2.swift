import FlowKitCore
import Foundation

/// The next release of ``SimulationFlow``, which a run with ``SimulationOptions/upgrade`` moves
/// its cluster to in the middle of its active period (docs/VERSIONING.md): version 2 gives the
/// cases' values labels (`{"append":{"token":"t7"}}` where version 1 wrote `{"append":{"_0":"t7"}}`)
/// and the state a count of the events applied, and reads what version 1 wrote through its steps.
/// Its reducer computes what version 1's did, so a replica that read a version-1 entry or state
/// through the steps holds what one that applied version 2's events would.
struct SimulationFlowV2: ReplicatedFlow {
    struct State: Codable, Hashable, Sendable {
        var tokens: [String] = []
        var marks: [String] = []
        var work: [String] = []
        /// How many events were applied: version 1's state has no such field, so it does not
        /// decode as this one without its step.
        var events: Int
    }

    @Dependency(\.uuid) var uuid
    @Dependency(\.date.now) var now
    @Dependency(\.withRandomNumberGenerator) var withRandomNumberGenerator

    enum Event: Codable, Hashable, Sendable {
        case append(token: String)
        case work(token: String)
        case tick(work: String, id: String)
    }

    static let initialState = State(events: 0)
    static var version: Int { 2 }
    static var migrations: FlowMigrations<Self> { migrations(droppingAppends: false) }

    /// The steps from version 1; `droppingAppends`: the injected bug
    /// ``InjectedBug/skipAMigrationStep``, a step that turns version 1's `append` into nothing.
    static func migrations(droppingAppends: Bool) -> FlowMigrations<Self> {
        FlowMigrations<Self>()
            .events(from: 1, as: SimulationFlow.Event.self) { old in
                switch old {
                case .append(let token): droppingAppends ? [] : [.append(token: token)]
                case .work(let token): [.work(token: token)]
                case .tick(let work, let id): [.tick(work: work, id: id)]
                }
            }
            .state(from: 1, as: SimulationFlow.State.self) { old in
                State(tokens: old.tokens, marks: old.marks, work: old.work, events: old.marks.count)
            }
    }

    /// Version 1's reducer, and the count.
    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.marks.append(SimulationFlow.mark(uuid: uuid, now: now, random: withRandomNumberGenerator))
        state.events += 1
        guard let started = SimulationFlow.record(event.asVersion1, tokens: &state.tokens, work: &state.work) else { return .none }
        return SimulationFlow.working(started)
    }

    static func resume(_ state: State) -> Effect<Event> {
        .merge(state.work.map(SimulationFlow.working))
    }
}

extension SimulationFlowV2.Event {
    /// The same event in version 1's shape (the checks read every entry as that).
    var asVersion1: SimulationFlow.Event {
        switch self {
        case .append(let token): .append(token)
        case .work(let token): .work(token)
        case .tick(let work, let id): .tick(work: work, id: id)
        }
    }
}

extension SimulationFlow {
    /// What a process of a simulated cluster runs: build 1 (``SimulationFlow``) or build 2
    /// (``SimulationFlowV2``, with its steps from version 1).
    ///
    /// - Parameters:
    ///   - liveDependencies: ``InjectedBug/liveReducerDependencies``: the reducers read the
    ///     process's own UUIDs, time and random numbers (a registration that overrides them with
    ///     live ones, the mistake a user could make).
    ///   - droppingAppends: ``InjectedBug/skipAMigrationStep``.
    static func registry(build: Int, liveDependencies: Bool = false, droppingAppends: Bool = false) -> FlowRegistry {
        let dependencies: @Sendable (inout DependencyValues) -> Void = { values in
            guard liveDependencies else { return }
            values.uuid = UUIDGenerator { UUID() }
            values.date = DateGenerator { Date() }
            values.withRandomNumberGenerator = WithRandomNumberGenerator(SystemRandomNumberGenerator())
        }
        var registry = FlowRegistry()
        if build >= 2 {
            registry.register(
                SimulationFlowV2.self, as: "sim", version: SimulationFlowV2.version, migrations: SimulationFlowV2.migrations(droppingAppends: droppingAppends),
                initialState: { _ in SimulationFlowV2.initialState }, flow: { SimulationFlowV2() }, resume: SimulationFlowV2.resume,
                withDependencies: dependencies
            )
        } else {
            registry.register(SimulationFlow.self, as: "sim", withDependencies: dependencies)
        }
        return registry
    }

    /// An event as a client of a process of `build` writes it.
    static func payload(_ event: Event, build: Int) -> [UInt8] {
        let encoded = build >= 2 ? try? JSONEncoder().encode(SimulationFlowV2.Event(event)) : try? JSONEncoder().encode(event)
        return encoded.map { [UInt8]($0) } ?? []
    }
}

extension SimulationFlowV2.Event {
    init(_ event: SimulationFlow.Event) {
        switch event {
        case .append(let token): self = .append(token: token)
        case .work(let token): self = .work(token: token)
        case .tick(let work, let id): self = .tick(work: work, id: id)
        }
    }
}
