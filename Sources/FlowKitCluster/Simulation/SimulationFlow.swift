import FlowKitCore

/// The flow a simulation's clients drive: every event carries a token no other event carries, so
/// an acknowledged event can be found in the log, and the state is the tokens in the order they
/// were applied, so two replicas agree only if they applied the same entries in the same order.
/// A `work` event starts an effect that runs until it is cancelled by its token: the checks find
/// it running on its origin node, and nowhere else, unless a cancel was ordered after it.
struct SimulationFlow: ReplicatedFlow {
    struct State: Codable, Hashable, Sendable {
        var tokens: [String] = []
    }

    enum Event: Codable, Hashable, Sendable {
        case append(String)
        /// Starts an effect, cancellable by the token, that never ends by itself.
        case work(String)
    }

    static let initialState = State()

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .append(let token):
            state.tokens.append(token)
            return .none
        case .work(let token):
            state.tokens.append(token)
            return .run { _ in try await Task.sleep(for: .seconds(100_000_000)) }.cancellable(id: token)
        }
    }

    /// The token an event carries.
    static func token(of event: Event) -> String {
        switch event {
        case .append(let token), .work(let token): token
        }
    }

    /// The registry every process of a simulated cluster runs.
    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(SimulationFlow.self, as: "sim")
        return registry
    }
}
