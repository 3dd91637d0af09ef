import FlowKitCore

/// An audit ledger: it records every id it is given, in order, duplicates included.
///
/// The fault tests use it to prove delivery: every acknowledged submission's id must appear exactly
/// once, whatever crashed in between.
public struct LedgerFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        public var ids: [String]

        public init(ids: [String] = []) {
            self.ids = ids
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case record(String)
    }

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .record(let id): state.ids.append(id)
        }
        return .none
    }
}

extension LedgerFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.record("order-1")] }

}
