import Foundation
import Testing

/// A hand-written actor flow cannot be registered for replication: the compiler refuses it, with a
/// message that says why and what to write instead. Checked by type-checking small programs
/// against the modules this test run was built with.
@Suite struct ActorFlowRefusalTests {
    static let actorFlow = """
        import FlowKit
        import FlowKitCluster

        actor HandWritten: StatefulFlowProviding {
            var state = 0
            var stateSubscribers: [((Int) -> Void)] = []
            func emit(_ event: Int) async { state = event }
        }

        var registry = FlowRegistry()
        registry.register(HandWritten.self, as: "hand")
        """

    /// The same program with a `Flow`: what the message tells the user to write. It must compile,
    /// or the refusal above could be any error.
    static let reducerFlow = """
        import FlowKit
        import FlowKitCluster

        struct Written: Flow, ReplicatedFlow {
            struct State: Codable, Hashable, Sendable { var value = 0 }
            enum Event: Codable, Sendable { case set(Int) }
            static var initialState: State { State() }
            func reduce(into state: inout State, event: Event) -> Effect<Event> {
                switch event { case .set(let value): state.value = value }
                return .none
            }
        }

        var registry = FlowRegistry()
        registry.register(Written.self)
        """

    @Test func registeringAnActorFlowIsACompileErrorThatExplainsItself() throws {
        let refused = try TypeCheck.run(Self.actorFlow)
        #expect(refused.status != 0)
        #expect(refused.output.contains("is unavailable: an actor flow cannot be replicated"), "\(refused.output)")
        #expect(refused.output.contains("Write it as a Flow"))

        let accepted = try TypeCheck.run(Self.reducerFlow)
        #expect(accepted.status == 0, "\(accepted.output)")
    }
}
