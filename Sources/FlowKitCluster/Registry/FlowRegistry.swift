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
            type, as: name, codec: codec, version: F.version, migrations: F.migrations, initialState: { _ in F.initialState }, flow: { F() },
            resume: F.resume, withDependencies: prepareDependencies
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
    ///   - migrations: How it reads older versions' events and states (`ReplicatedFlow.migrations`):
    ///     a registration whose steps do not chain up to `version` stops the process, naming the
    ///     flow and the versions.
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
        migrations: FlowMigrations<F> = FlowMigrations(),
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
        let readable: ClosedRange<Int>
        do {
            readable = try migrations.readableVersions(upTo: version)
        } catch {
            preconditionFailure("cannot register flow \"\(name)\" at version \(version): \(error)")
        }
        flows[name] = TypedFlowRegistration<F>(
            name: name, codecs: codecs, version: UInt16(version), oldestReadable: UInt16(readable.lowerBound), migrations: migrations,
            initialState: initialState, makeFlow: flow, resume: resume, prepareDependencies: prepareDependencies
        )
    }

    /// The registered names, sorted.
    public var names: [String] { flows.keys.sorted() }

    /// What each registered flow takes and holds, by name: for people (`flowkit flows`).
    public var descriptions: [FlowDescription] { names.map { flows[$0]!.flowDescription } }

    func flow(named name: String) -> (any RegisteredFlow)? { flows[name] }

    /// Each flow's version, for the flows not at version 1; `nil` when every flow is (what HELLO
    /// carries, ``NodeInfo/flowVersions``).
    var versionsAboveOne: [String: UInt16]? {
        let versions = flows.compactMapValues { $0.version > 1 ? $0.version : nil }
        return versions.isEmpty ? nil : versions
    }

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
    /// The oldest version this process reads, through its migrations; ``version`` without any.
    var oldestReadable: UInt16 { get }

    /// Decodes an event payload to check it, and returns it encoded with the wire codec.
    func normalise(_ payload: [UInt8], codec: PayloadCodec) throws -> [UInt8]
    /// Checks that an event payload an older `version` wrote reads through the migrations; returns
    /// it as it is (it is ordered at its version).
    func check(_ payload: [UInt8], codec: PayloadCodec, version: UInt16) throws -> [UInt8]
    /// A snapshot's state that `version` wrote, as this build's state JSON.
    func migrateState(_ json: [UInt8], from version: UInt16) throws -> [UInt8]
    /// The digest a replica of this build computes for a state that `version` wrote (read through
    /// the migrations), as ``StateDigest/init(of:)`` hashes this build's state.
    func stateDigest(_ json: [UInt8], from version: UInt16) throws -> StateDigest

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

struct TypedFlowRegistration<F: Flow>: RegisteredFlow where F.State: Codable, F.Event: Codable {
    let name: String
    let codecs: EventCodecs<F.Event>
    let version: UInt16
    var oldestReadable: UInt16 = 1
    var migrations = FlowMigrations<F>()
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

    /// The events an entry's payload is in this build: itself when this version wrote it; through
    /// the migrations when an older one did (JSON only: a binary codec keeps its own encoding
    /// readable across versions).
    func events(of payload: [UInt8], codec: PayloadCodec, version written: UInt16) throws -> SmallList<F.Event> {
        guard written != version, codec == .json else { return SmallList(try codecs.decode(payload, codec: codec)) }
        do {
            return SmallList(contentsOf: try migrations.events(from: Int(written), json: payload, to: Int(version)))
        } catch let error as FlowMigrationError {
            throw ProtocolError(.undecodableEvent, "an event of flow \"\(name)\" at version \(written) does not read as version \(version): \(error)")
        }
    }

    func check(_ payload: [UInt8], codec: PayloadCodec, version written: UInt16) throws -> [UInt8] {
        guard written != version else { return try normalise(payload, codec: codec) }
        _ = try events(of: payload, codec: codec, version: written)
        return payload
    }

    func migrateState(_ json: [UInt8], from written: UInt16) throws -> [UInt8] {
        guard written != version else { return json }
        do {
            let state = try migrations.state(from: Int(written), json: json, to: Int(version))
            return Array(try ReplicaSet.stateEncoder().encode(state))
        } catch let error as FlowMigrationError {
            throw ProtocolError(.malformed, "a state of flow \"\(name)\" at version \(written) does not read as version \(version): \(error)")
        }
    }

    func stateDigest(_ json: [UInt8], from written: UInt16) throws -> StateDigest {
        let state = try JSONDecoder().decode(F.State.self, from: Data(try migrateState(json, from: written)))
        return try StateDigest(of: state)
    }

    var flowDescription: FlowDescription {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return FlowDescription(
            name: name, eventType: String(reflecting: F.Event.self), stateType: String(reflecting: F.State.self), codec: "\(codecs.wire)",
            version: Int(version), events: samples, initialState: (try? String(decoding: encoder.encode(initialState("example")), as: UTF8.self)) ?? "?"
        )
    }
}
