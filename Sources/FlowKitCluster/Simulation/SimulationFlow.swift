import FlowKit

/// The flow a simulation's clients drive: every event carries a token no other event carries, so
/// an acknowledged event can be found in the log, and the state is the tokens in the order they
/// were applied, so two replicas agree only if they applied the same entries in the same order.
struct SimulationFlow: ReplicatedFlow {
    struct State: Codable, Hashable, Sendable {
        var tokens: [String] = []
    }

    enum Event: Codable, Hashable, Sendable {
        case append(String)
        /// Marks the instance's effects cancelled at this point of the order.
        case stop
    }

    static let initialState = State()

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .append(let token):
            state.tokens.append(token)
            return .none
        case .stop:
            state.tokens.append("stop")
            return .none
        }
    }

    /// The registry every process of a simulated cluster runs.
    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(SimulationFlow.self, as: "sim")
        return registry
    }
}
