@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import Foundation
import Logging
import Testing

/// A build reads what older versions wrote through its flow's migrations: entries, submissions
/// and snapshot states (docs/VERSIONING.md, guarantees 1 and 2).
@Suite struct MigrationTests {
    /// Version 2 of a tally: version 1 had `add(Int)` and a state `count`.
    struct TallyFlow: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable {
            var total = 0
            var events = 0
        }

        enum Event: Codable, Equatable, Sendable {
            case increment(amount: Int)
            case reset
        }

        static var initialState: State { State() }
        static var version: Int { 2 }
        static var migrations: FlowMigrations<Self> {
            FlowMigrations<Self>()
                .events(from: 1, as: V1.Event.self) { old in
                    switch old {
                    case .add(let amount): [.increment(amount: amount)]
                    case .clear: [.reset, .increment(amount: 0)]
                    }
                }
                .state(from: 1, as: V1.State.self) { old in State(total: old.count, events: 0) }
        }

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .increment(let amount): state.total += amount
            case .reset: state.total = 0
            }
            state.events += 1
            return .none
        }
    }

    enum V1 {
        enum Event: Codable { case add(Int), clear }
        struct State: Codable { var count: Int }
    }

    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    static var registry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(TallyFlow.self, as: "tally")
        return registry
    }

    /// The same flow at version 2 without its steps: it reads version 2 only.
    static var withoutSteps: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(TallyFlow.self, as: "tally", version: 2, initialState: { _ in TallyFlow.initialState }, flow: { TallyFlow() })
        return registry
    }

    static func entry(_ seq: UInt64, version: UInt16, _ json: String) -> Entry {
        Entry(
            seq: seq, epoch: 1, kind: .event, codec: .json, version: version, origin: 1, session: 1, submission: seq, submittedAt: 0,
            committedAt: 0, address: "tally/a", payload: Array(json.utf8)
        )
    }

    static func state(_ replicas: ReplicaSet) throws -> TallyFlow.State {
        let replica = try #require(replicas.replica(at: try Address(parsing: "tally/a")))
        return try JSONDecoder().decode(TallyFlow.State.self, from: Data(try replica.stateJSON()))
    }

    @Test func oldEntriesApplyThroughTheSteps() throws {
        let replicas = ReplicaSet(registry: Self.registry, logger: Self.logger)
        replicas.apply(Self.entry(1, version: 1, #"{"add":{"_0":5}}"#), runEffects: false)
        replicas.apply(Self.entry(2, version: 2, #"{"increment":{"amount":2}}"#), runEffects: false)
        #expect(try Self.state(replicas) == TallyFlow.State(total: 7, events: 2))
        // One old event that became two.
        replicas.apply(Self.entry(3, version: 1, #"{"clear":{}}"#), runEffects: false)
        #expect(try Self.state(replicas) == TallyFlow.State(total: 0, events: 4))
        #expect(replicas.skippedEntries == 0)
    }

    @Test func aBuildWithoutAStepFromAVersionStopsBeforeIt() {
        #expect(Self.withoutSteps.flow(named: "tally")?.oldestReadable == 2)
        var stream = OrderedStream(versions: ReadableVersions(Self.withoutSteps))
        #expect(stream.receive([Self.entry(1, version: 2, #"{"reset":{}}"#), Self.entry(2, version: 1, #"{"add":{"_0":5}}"#)]).map(\.seq) == [1])
        let unreadable = stream.unreadable
        #expect(unreadable == UnreadableEntry(seq: 2, flow: "tally", version: 1, reads: 2, readsFrom: 2))
        #expect(unreadable.map { "\($0)" }?.contains("this build reads version 2 only: it applies nothing from there on until it runs a build with a migration step from that version") == true)
    }

    @Test func theCoordinatorOrdersAnOldEventAsItWasWritten() throws {
        let admission = Admission(registry: Self.registry, limits: AdmissionLimits())
        func submission(_ json: String, version: UInt16) -> Submission {
            Submission(submission: 1, kind: .event, codec: .json, version: version, submittedAt: 0, address: "tally/a", payload: Array(json.utf8))
        }
        let old = try admission.admit(submission(#"{"add":{"_0":5}}"#, version: 1))
        #expect(old.version == 1 && old.payload == Array(#"{"add":{"_0":5}}"#.utf8) && old.codec == .json)
        let undecodable = #expect(throws: ProtocolError.self) { try admission.admit(submission(#"{"increment":{"amount":1}}"#, version: 1)) }
        #expect(undecodable?.code == .undecodableEvent)
        #expect(undecodable?.message.contains("at version 1 does not read as version 2") == true, "\(String(describing: undecodable))")
        // A build without the step cannot check it, and says what to do.
        let strict = Admission(registry: Self.withoutSteps, limits: AdmissionLimits())
        let refused = #expect(throws: ProtocolError.self) { try strict.admit(submission(#"{"add":{"_0":5}}"#, version: 1)) }
        #expect(refused?.code == .versionUnreadable)
        #expect(refused?.message.contains("give the flow a migration step from that version") == true, "\(String(describing: refused))")
    }

    @Test func anOldSnapshotStateIsMigratedWhenRestored() throws {
        let replicas = ReplicaSet(registry: Self.registry, logger: Self.logger)
        try replicas.importStates([SnapshotChunkMessage.Instance(address: "tally/a", lastSeq: 4, state: Array(#"{"count":3}"#.utf8))])
        #expect(try Self.state(replicas) == TallyFlow.State(total: 3, events: 0))
        let exported = replicas.exportStates()
        #expect(exported.map(\.stateVersion) == [2])
        #expect(exported.map { String(decoding: $0.state, as: UTF8.self) } == [#"{"events":0,"total":3}"#])
        // A state that does not migrate is refused whole.
        let broken = SnapshotChunkMessage.Instance(address: "tally/a", lastSeq: 4, state: Array(#"{"total":3}"#.utf8))
        #expect(throws: ProtocolError.self) { try replicas.importStates([broken]) }
        #expect(try Self.state(replicas) == TallyFlow.State(total: 3, events: 0), "nothing replaced")
    }
}
