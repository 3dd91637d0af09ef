import FlowKitCore

/// The flow the load tool drives: each event counts, carries padding of a chosen size, and can
/// start an effect, so a benchmark can be plain or effect-heavy.
///
/// Its events have a compact binary encoding, so a cluster can carry them at high rates.
public struct LoadFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        /// Events applied to this instance.
        public var count: Int
        /// Effects that reported back (only for effect-heavy events).
        public var effectsDone: Int

        public init(count: Int = 0, effectsDone: Int = 0) {
            self.count = count
            self.effectsDone = effectsDone
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        /// Counts; `padding` only makes the event bigger.
        case tick(padding: [UInt8])
        /// Counts, and starts an effect that runs briefly on the origin node and reports back.
        case tickWithEffect(padding: [UInt8])
        /// Sent by that effect.
        case effectDone
    }

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .tick:
            state.count += 1
            return .none
        case .tickWithEffect:
            state.count += 1
            return .run { send in
                await Task.yield()
                await send(.effectDone)
            }
        case .effectDone:
            state.effectsDone += 1
            return .none
        }
    }
}

extension LoadFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.tick(padding: []), .tickWithEffect(padding: [0, 0])] }
}

extension LoadFlow.Event: BinaryEventCodable {
    /// One tag byte (1 tick, 2 tick with effect, 3 effect done), then the padding.
    public func binaryEncoded() -> [UInt8] {
        switch self {
        case .tick(let padding): [1] + padding
        case .tickWithEffect(let padding): [2] + padding
        case .effectDone: [3]
        }
    }

    public init(binaryEncoded bytes: [UInt8]) throws {
        switch bytes.first {
        case 1: self = .tick(padding: Array(bytes.dropFirst()))
        case 2: self = .tickWithEffect(padding: Array(bytes.dropFirst()))
        case 3 where bytes.count == 1: self = .effectDone
        default: throw BinaryDecodingError(type: "LoadFlow.Event", bytes: bytes.count)
        }
    }
}
