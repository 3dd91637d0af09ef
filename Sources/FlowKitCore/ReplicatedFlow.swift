/// A flow that a cluster can replicate: its state and events are `Codable`, the flow can be built
/// with no arguments, and every instance starts from the same state.
///
/// ```swift
/// extension CounterFlow: ReplicatedFlow {
///     static var initialState: State { State() }
/// }
/// registry.register(CounterFlow.self)   // as "counter", its flowName
/// 
/// ```
///
/// Replication replays one ordered log on every node, so the reducer must be deterministic: no
/// clock reads, randomness or I/O inside `reduce`; those belong in effects.
public protocol ReplicatedFlow: Flow where State: Codable, Event: Codable {
    /// Builds the flow. Dependencies it declares resolve in the node's dependency scope.
    init()
    /// The state of an instance before its first event.
    static var initialState: State { get }
    /// An event of each kind the flow takes (those clients send first, then those its effects
    /// send), shown as JSON by `flowkit flows` and in the error a client gets for an event that
    /// does not decode.
    static var sampleEvents: [Event] { get }
    /// The flow's name in addresses (`name/instanceKey`) unless it is registered under another:
    /// by default the type's name without its `Flow` suffix, in kebab case (`CounterFlow` is
    /// `counter`, `ChatRoomFlow` is `chat-room`).
    static var flowName: String { get }
    /// The version of the shape of the flow's events and state: 1 unless the flow says otherwise.
    /// Every entry records the version of the flow that submitted it; a process that meets an
    /// entry of a version above its own stops applying rather than read it with its own types
    /// (docs/VERSIONING.md). Raise it in the release that changes either shape.
    static var version: Int { get }
    /// How this build reads what older versions wrote: a step from each older version a log may
    /// still hold, for its events and for its state (``FlowMigrations``). An entry or state of a
    /// version no chain of steps reaches is never guessed at: the process stops before it.
    static var migrations: FlowMigrations<Self> { get }
    /// The effects an instance in `state` should have running, started again on a surviving node
    /// when the node that ran them dies (a *takeover*): a timer whose state says it is active
    /// returns its ticking effect; a countdown, the rest of its countdown.
    ///
    /// Called on every replica when the takeover entry is applied, and run only by the instance's
    /// new owner; like a reducer it reads nothing but `state` and its dependencies. The default
    /// resumes nothing: the instance's effects stop. A flow that wants its state to say so returns
    /// an event of its own, `.send(.effectsLost)`, which every replica reduces.
    ///
    /// ```swift
    /// static func resume(_ state: State) -> Effect<Event> {
    ///     state.isTimerActive ? .run { send in … }.cancellable(id: CancelID.timer) : .none
    /// }
    /// ```
    static func resume(_ state: State) -> Effect<Event>
}

extension ReplicatedFlow {
    public static func resume(_ state: State) -> Effect<Event> { .none }
    public static var sampleEvents: [Event] { [] }
    public static var flowName: String { defaultFlowName(forType: String(describing: Self.self)) }
    public static var version: Int { 1 }
    public static var migrations: FlowMigrations<Self> { FlowMigrations() }
}

/// `CounterFlow` → `counter`, `ChatRoomFlow` → `chat-room`, `HTTPProxyFlow` → `http-proxy`:
/// the type's name (without generic arguments) minus a `Flow` suffix, words joined by `-`, and only
/// what an address allows (`a-z`, `0-9`, `-`, `_`; at most 48 bytes).
func defaultFlowName(forType typeName: String) -> String {
    var name = Substring(typeName.prefix { $0 != "<" })
    if name.hasSuffix("Flow"), name.count > 4 { name = name.dropLast(4) }
    let characters = Array(name)
    var result = ""
    for (index, character) in characters.enumerated() {
        if character.isUppercase, index > 0 {
            let previous = characters[index - 1]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            // A new word starts at an upper-case letter after a lower-case one or a digit, and at
            // the last capital of an acronym followed by a lower-case letter ("HTTPProxy").
            if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                result.append("-")
            }
        }
        let lowered = character.lowercased()
        if lowered.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }) {
            result.append(lowered)
        }
    }
    return result.isEmpty ? "flow" : String(result.prefix(48))
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
