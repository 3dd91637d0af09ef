/// A flow that a cluster can replicate: its state and events are `Codable`, the flow can be built
/// with no arguments, and every instance starts from the same state.
///
/// ```swift
/// extension CounterFlow: ReplicatedFlow {
///     static var initialState: State { State() }
/// }
/// registry.register(CounterFlow.self, as: "counter")
/// ```
///
/// Replication replays one ordered log on every node, so the reducer must be deterministic: no
/// clock reads, randomness or I/O inside `reduce`; those belong in effects.
public protocol ReplicatedFlow: Flow where State: Codable, Event: Codable {
    /// Builds the flow. Dependencies it declares resolve in the node's dependency scope.
    init()
    /// The state of an instance before its first event.
    static var initialState: State { get }
    /// A few events, shown (as JSON) in the error a client gets for an event that does not decode.
    static var sampleEvents: [Event] { get }
}

extension ReplicatedFlow {
    public static var sampleEvents: [Event] { [] }
}

/// An event with a compact binary encoding, for clusters that need more speed than JSON gives.
///
/// A flow whose `Event` conforms can be registered with the binary codec; every entry still says
/// which codec its payload uses, so codecs are never mixed silently.
public protocol BinaryEventCodable: Sendable {
    /// The event's bytes.
    func binaryEncoded() -> [UInt8]
    /// Decodes an event, throwing for bytes that are not one.
    init(binaryEncoded bytes: [UInt8]) throws
}
