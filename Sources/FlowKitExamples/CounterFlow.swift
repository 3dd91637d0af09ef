import FlowKit

/// The smallest flow: a count that goes up and down.
public struct CounterFlow: Flow {
    public struct State: Codable, Equatable, Sendable {
        public var count: Int

        public init(count: Int = 0) {
            self.count = count
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case increment
        case decrement
        case add(Int)
        case reset
    }

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .increment: state.count += 1
        case .decrement: state.count -= 1
        case .add(let amount): state.count += amount
        case .reset: state.count = 0
        }
        return .none
    }
}
