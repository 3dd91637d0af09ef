import FlowKitCore

/// The smallest flow: a count that goes up and down.
public struct CounterFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
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

extension CounterFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.increment, .add(5), .decrement, .reset] }

}

extension CounterFlow.Event: BinaryEventCodable {
    /// One tag byte, then an 8-byte big-endian amount for `add`.
    public func binaryEncoded() -> [UInt8] {
        switch self {
        case .increment: return [1]
        case .decrement: return [2]
        case .reset: return [4]
        case .add(let amount):
            var bytes: [UInt8] = [3]
            let bits = UInt64(bitPattern: Int64(amount))
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
            return bytes
        }
    }

    public init(binaryEncoded bytes: [UInt8]) throws {
        switch (bytes.first, bytes.count) {
        case (1, 1): self = .increment
        case (2, 1): self = .decrement
        case (4, 1): self = .reset
        case (3, 9):
            let bits = bytes[1...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .add(Int(Int64(bitPattern: bits)))
        default:
            throw BinaryDecodingError(type: "CounterFlow.Event", bytes: bytes.count)
        }
    }
}
