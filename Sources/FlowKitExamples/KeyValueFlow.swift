import FlowKitCore

/// A replicated dictionary of strings: the building block of configuration and presence data.
public struct KeyValueFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        public var entries: [String: String]
        /// How many writes the instance has applied, removals included.
        public var version: Int

        public init(entries: [String: String] = [:], version: Int = 0) {
            self.entries = entries
            self.version = version
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case set(key: String, value: String)
        case remove(key: String)
        case clear
    }

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .set(let key, let value): state.entries[key] = value
        case .remove(let key): state.entries[key] = nil
        case .clear: state.entries.removeAll()
        }
        state.version += 1
        return .none
    }
}

extension KeyValueFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var flowName: String { "kv" }
    public static var sampleEvents: [Event] { [.set(key: "mode", value: "fast"), .remove(key: "mode"), .clear] }

}
