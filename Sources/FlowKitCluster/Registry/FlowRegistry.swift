import FlowKitCore
import Foundation

/// The flows a cluster process can run, by name: build one in your `main`, then run a node or a
/// coordinator from it.
///
/// ```swift
/// var registry = FlowRegistry()
/// registry.register(CounterFlow.self)               // as "counter", its flowName
/// registry.register(TimerFlow.self, as: "timer")
/// try await Node(configuration: configuration, registry: registry, logger: logger).run()
/// ```
///
/// Every process of a cluster must register the same flows under the same names, with reducers
/// that behave the same: they replay the same log.
public struct FlowRegistry: Sendable {
    private var flows: [String: any RegisteredFlow] = [:]

    public init() {}

    /// Registers a flow that builds itself and knows its initial state.
    ///
    /// - Parameters:
    ///   - type: The flow type.
    ///   - name: The flow's name in addresses (`name/instanceKey`): 1-48 of a-z, 0-9, - and _;
    ///     by default the flow's `ReplicatedFlow.flowName`.
    ///   - codec: How nodes encode this flow's events in submissions. `.binary` needs an `Event`
    ///     that conforms to `BinaryEventCodable`. Clients may always send JSON.
    ///   - prepareDependencies: Overrides dependencies for this flow's reducers and effects, as a
    ///     store's `withDependencies:` does. Inside a reducer, `uuid`, `date`, random numbers and
    ///     the clocks' `now` already derive from the entry being reduced, the same on every node;
    ///     what is set here wins over that, so set it to the same on every node.
    public mutating func register<F: ReplicatedFlow>(
        _ type: F.Type, as name: String = F.flowName, codec: PayloadCodec = .json,
        withDependencies prepareDependencies: @escaping @Sendable (inout DependencyValues) -> Void = { _ in }
    ) {
        register(
            type, as: name, codec: codec, version: F.version, initialState: { _ in F.initialState }, flow: { F() }, resume: F.resume,
            withDependencies: prepareDependencies
        )
        flows[name] = (flows[name] as? TypedFlowRegistration<F>)?.withSamples(F.sampleEvents)
    }

    /// An actor flow cannot be replicated: its `emit(_:)` runs any async code it likes (network
    /// calls, clocks, randomness), which every node would run again, each with its own outcome, so
    /// the replicas would drift apart. Write it as a ``Flow``: `reduce(into:event:)` changes the
    /// state synchronously and returns the async work as an ``Effect``, which only the node that
    /// ordered the event runs; the events the effect sends back are ordered like any other.
    @available(
        *, unavailable,
        message: "an actor flow cannot be replicated: its emit(_:) runs async code that every node would run again. Write it as a Flow (a reducer returning effects) and conform it to ReplicatedFlow"
    )
    public mutating func register<F: StatefulFlowProviding>(_ type: F.Type, as name: String = "", codec: PayloadCodec = .json) {
        fatalError("unavailable")
    }

    /// Registers a flow with explicit construction.
    ///
    /// - Parameters:
    ///   - type: The flow type.
    ///   - name: The flow's name in addresses.
    ///   - codec: How nodes encode this flow's events in submissions.
    ///   - version: The version of the shape of its events and state (`ReplicatedFlow.version`),
    ///     1 to 65,535: recorded with every entry this process submits.
    ///   - initialState: The state of a new instance, given its key.
    ///   - flow: Builds the flow for a new instance.
    ///   - resume: The effects an instance should have running, from its state, started on a
    ///     surviving node when the node running them dies (`ReplicatedFlow.resume(_:)`); by
    ///     default none.
    ///   - prepareDependencies: Overrides dependencies for the flow's reducers and effects (see
    ///     ``register(_:as:codec:withDependencies:)``).
    public mutating func register<F: Flow>(
        _ type: F.Type,
        as name: String,
        codec: PayloadCodec = .json,
        version: Int = 1,
        initialState: @escaping @Sendable (_ key: String) -> F.State,
        flow: @escaping @Sendable () -> F,
        resume: @escaping @Sendable (_ state: F.State) -> Effect<F.Event> = { _ in .none },
        withDependencies prepareDependencies: @escaping @Sendable (inout DependencyValues) -> Void = { _ in }
    ) where F.State: Codable, F.Event: Codable {
        do {
            _ = try Address(flow: name, key: "x")
        } catch {
            preconditionFailure("cannot register flow \"\(name)\": \(error)")
        }
        let codecs = EventCodecs<F.Event>(wire: codec)
        precondition(
            codec == .json || codecs.supportsBinary,
            "flow \"\(name)\" is registered with the binary codec, but \(F.Event.self) does not conform to BinaryEventCodable"
        )
        precondition(
            (1...Int(UInt16.max)).contains(version), "flow \"\(name)\" declares version \(version); a version is 1 to \(UInt16.max)"
        )
        flows[name] = TypedFlowRegistration<F>(
            name: name, codecs: codecs, version: UInt16(version), initialState: initialState, makeFlow: flow, resume: resume, prepareDependencies: prepareDependencies
        )
    }

    /// The registered names, sorted.
    public var names: [String] { flows.keys.sorted() }

    /// What each registered flow takes and holds, by name: for people (`flowkit flows`).
    public var descriptions: [FlowDescription] { names.map { flows[$0]!.flowDescription } }

    func flow(named name: String) -> (any RegisteredFlow)? { flows[name] }

    /// The registration for an address, or an `unknownFlow` error that lists what is registered.
    func flow(for address: Address) throws -> any RegisteredFlow {
        guard let flow = flows[address.flow] else {
            throw ProtocolError(
                .unknownFlow,
                "no flow is registered as \"\(address.flow)\"; this cluster runs: \(names.joined(separator: ", "))"
            )
        }
        return flow
    }
}

/// A registered flow type, seen without its generic parameters.
protocol RegisteredFlow: Sendable {
    /// The flow type registered.
    associatedtype Registered: Flow where Registered.State: Codable, Registered.Event: Codable

    /// The registration with its flow type, for what needs the type (a replica).
    var typed: TypedFlowRegistration<Registered> { get }
    var name: String { get }
    var wireCodec: PayloadCodec { get }
    /// The version of the flow's shape this process writes and reads up to (`ReplicatedFlow.version`).
    var version: UInt16 { get }

    /// Decodes an event payload to check it, and returns it encoded with the wire codec.
    func normalise(_ payload: [UInt8], codec: PayloadCodec) throws -> [UInt8]

    var flowDescription: FlowDescription { get }
}

/// A registered flow as a person sees it: its name, its events and the state of a new instance,
/// in the JSON that clients send and queries return.
public struct FlowDescription: Codable, Sendable, Equatable {
    /// The name in addresses (`name/key`).
    public var name: String
    /// The Swift types of its events and its state.
    public var eventType: String
    public var stateType: String
    /// How nodes encode its events in submissions (`json` or `binary`); clients may always send JSON.
    public var codec: String
    /// The version of its events' and state's shape (`ReplicatedFlow.version`).
    public var version: Int
    /// Sample events, one of each kind the flow lists (`ReplicatedFlow.sampleEvents`), as JSON.
    public var events: [String]
    /// The state of a new instance (key `example`), as JSON.
    public var initialState: String
}

/// How one flow's events are encoded, captured once at registration.
struct EventCodecs<Event: Codable & Sendable>: Sendable {
    let wire: PayloadCodec
    private let encodeBinary: (@Sendable (Event) -> [UInt8])?
    private let decodeBinary: (@Sendable ([UInt8]) throws -> Event)?

    init(wire: PayloadCodec) {
        self.wire = wire
        if let binaryType = Event.self as? any BinaryEventCodable.Type {
            (encodeBinary, decodeBinary) = Self.binaryCoders(binaryType)
        } else {
            encodeBinary = nil
            decodeBinary = nil
        }
    }

    /// The coders of an event type that is `Binary`, found once. `Binary` is `Event` itself (the
    /// cast above found it), so a value of one is read as the other in place rather than cast: a
    /// cast through `any BinaryEventCodable` per event looked the types up at run time each time.
    private static func binaryCoders<Binary: BinaryEventCodable>(
        _: Binary.Type
    ) -> (@Sendable (Event) -> [UInt8], @Sendable ([UInt8]) throws -> Event) {
        precondition(Binary.self == Event.self, "the binary coders of \(Event.self) must be its own")
        return (
            { event in withUnsafePointer(to: event) { $0.withMemoryRebound(to: Binary.self, capacity: 1) { $0.pointee.binaryEncoded() } } },
            { bytes in
                let event = try Binary(binaryEncoded: bytes)
                return withUnsafePointer(to: event) { $0.withMemoryRebound(to: Event.self, capacity: 1) { $0.pointee } }
            }
        )
    }

    var supportsBinary: Bool { decodeBinary != nil }

    func decode(_ payload: [UInt8], codec: PayloadCodec) throws -> Event {
        do {
            switch codec {
            case .json:
                return try JSONDecoder().decode(Event.self, from: Data(payload))
            case .binary:
                guard let decodeBinary else {
                    throw ProtocolError(.unsupportedCodec, "\(Event.self) has no binary encoding; send JSON (codec 1)")
                }
                return try decodeBinary(payload)
            }
        } catch let error as ProtocolError {
            throw error
        } catch {
            let reason = codec == .json ? Self.describeJSON(payload, error) : Self.describe(error)
            throw ProtocolError(.undecodableEvent, "the \(codec) payload does not decode as \(String(reflecting: Event.self)) (\(reason))")
        }
    }

    func encode(_ event: Event) -> [UInt8] {
        if wire == .binary, let encodeBinary { return encodeBinary(event) }
        // A Codable event of plain values always encodes.
        return (try? Array(JSONEncoder().encode(event))) ?? []
    }

    /// Why a JSON payload is not an event, in the terms of the encoding Swift synthesizes for an
    /// enum: an object with one key, the case's name. Foundation's own words for an unknown case
    /// ("Invalid number of keys found, expected one") puzzle anyone who sent one key.
    static func describeJSON(_ payload: [UInt8], _ error: any Error) -> String {
        let atTop: Bool = switch error as? DecodingError {
        case .typeMismatch(_, let context)?, .dataCorrupted(let context)?, .keyNotFound(_, let context)?, .valueNotFound(_, let context)?:
            context.codingPath.isEmpty
        default:
            false
        }
        guard atTop, case .object(let object)? = try? JSONValue(parsing: payload) else {
            return describe(error)
        }
        switch object.count {
        case 1: return "no event case named \"\(object.keys.first!)\""
        case 0: return "an event is a JSON object with one key, its case name; this object has none"
        default:
            let keys = object.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            return "an event is a JSON object with one key, its case name; this object has \(object.count): \(keys)"
        }
    }

    /// A decoding error in a sentence, with the path to the bad field.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map(\.stringValue).joined(separator: ".")
            return keys.isEmpty ? "" : " at \(keys)"
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .keyNotFound(_, let context),
            .dataCorrupted(let context):
            return context.debugDescription + path(context)
        @unknown default:
            return "\(error)"
        }
    }
}

struct TypedFlowRegistration<F: Flow>: RegisteredFlow where F.State: Codable, F.Event: Codable {
    let name: String
    let codecs: EventCodecs<F.Event>
    let version: UInt16
    let initialState: @Sendable (String) -> F.State
    let makeFlow: @Sendable () -> F
    /// The effects an instance should have running, from its state (`ReplicatedFlow.resume(_:)`).
    let resume: @Sendable (F.State) -> Effect<F.Event>
    /// The registration's own dependency overrides, applied after the entry-derived values.
    var prepareDependencies: @Sendable (inout DependencyValues) -> Void = { _ in }

    var wireCodec: PayloadCodec { codecs.wire }

    /// Sample events as JSON, for error messages.
    var samples: [String] = []

    func withSamples(_ events: [F.Event]) -> Self {
        var copy = self
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        copy.samples = events.compactMap { try? String(decoding: encoder.encode($0), as: UTF8.self) }
        return copy
    }

    func normalise(_ payload: [UInt8], codec: PayloadCodec) throws -> [UInt8] {
        do {
            let event = try codecs.decode(payload, codec: codec)
            return codec == codecs.wire ? payload : codecs.encode(event)
        } catch let error as ProtocolError where error.code == .undecodableEvent {
            var message = "not an event of flow \"\(name)\": \(error.message)"
            if !samples.isEmpty { message += ". Events look like: " + samples.joined(separator: ", ") }
            throw ProtocolError(.undecodableEvent, message)
        }
    }

    var typed: Self { self }

    var flowDescription: FlowDescription {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return FlowDescription(
            name: name, eventType: String(reflecting: F.Event.self), stateType: String(reflecting: F.State.self), codec: "\(codecs.wire)",
            version: Int(version), events: samples, initialState: (try? String(decoding: encoder.encode(initialState("example")), as: UTF8.self)) ?? "?"
        )
    }
}
