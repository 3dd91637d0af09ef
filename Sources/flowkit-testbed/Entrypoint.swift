import FlowKit
import FlowKitCluster
import FlowKitTools

/// `flowkit` with extra flows that only tests need, given to the command the way a user's own
/// binary gives its flows to `FlowKitCLI.main(registry:)`.
@main
enum Entrypoint {
    static func main() async {
        var registry = FlowKitTools.registry
        registry.register(NondeterministicFlow.self, as: "nondeterministic")
        await FlowKitTools.main(registry: registry)
    }
}

/// A flow that breaks the one rule: its reducer reads the process's randomness. Replicas of it
/// diverge, and the cluster must say so.
struct NondeterministicFlow: ReplicatedFlow {
    struct State: Codable, Equatable, Sendable { var value = 0 }
    enum Event: Codable, Equatable, Sendable { case roll }

    static var initialState: State { State() }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.value = Int.random(in: 0..<1_000_000)
        return .none
    }
}
