@_spi(Benchmarks) @_spi(Wire) @testable import FlowKitCluster
import FlowKitCore
import Foundation
import Logging
import Testing

/// The replay check passes a compatible release and fails an incompatible one, naming what broke
/// (docs/VERSIONING.md, "The replay check").
@Suite struct ReplayCheckTests {
    /// The release a sample was recorded with.
    struct TallyV1: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable { var count = 0 }
        enum Event: Codable, Equatable, Sendable { case add(Int), clear }
        static var initialState: State { State() }
        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .add(let amount): state.count += amount
            case .clear: state.count = 0
            }
            return .none
        }
    }

    /// The next release, done right: renamed cases, a label, a reshaped state, and steps from 1.
    struct TallyV2: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable { var total = 0 }
        enum Event: Codable, Equatable, Sendable { case increment(amount: Int), reset }
        static var initialState: State { State() }
        static var version: Int { 2 }
        static var migrations: FlowMigrations<Self> {
            FlowMigrations<Self>()
                .events(from: 1, as: TallyV1.Event.self) { old in
                    switch old {
                    case .add(let amount): [.increment(amount: amount)]
                    case .clear: [.reset]
                    }
                }
                .state(from: 1, as: TallyV1.State.self) { State(total: $0.count) }
        }
        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .increment(let amount): state.total += amount
            case .reset: state.total = 0
            }
            return .none
        }
    }

    /// The next release, done wrong: `clear` removed without a new version or a step.
    struct TallyWithoutClear: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable { var count = 0 }
        enum Event: Codable, Equatable, Sendable { case add(Int) }
        static var initialState: State { State() }
        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            if case .add(let amount) = event { state.count += amount }
            return .none
        }
    }

    /// The next release, done wrong in a way that still decodes: `clear` now halves the count.
    struct TallyHalving: ReplicatedFlow {
        typealias State = TallyV1.State
        typealias Event = TallyV1.Event
        static var initialState: State { State() }
        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .add(let amount): state.count += amount
            case .clear: state.count /= 2
            }
            return .none
        }
    }

    static func registry<F: ReplicatedFlow>(_ flow: F.Type) -> FlowRegistry {
        var registry = FlowRegistry()
        registry.register(flow, as: "tally")
        return registry
    }

    /// A sample as `flowkit export` records one with build 1: events for `tally/a` and `tally/b`
    /// from seq 3 on, after two that set the start states.
    static let sample: ReplaySample = {
        let registry = Self.registry(TallyV1.self)
        let replicas = ReplicaSet(registry: registry, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let events: [(String, String)] = [
            ("tally/a", #"{"add":{"_0":5}}"#), ("tally/b", #"{"add":{"_0":1}}"#),
            ("tally/a", #"{"add":{"_0":2}}"#), ("tally/a", #"{"clear":{}}"#), ("tally/a", #"{"add":{"_0":4}}"#), ("tally/b", #"{"add":{"_0":9}}"#),
        ]
        var recorded: [Entry] = []
        var start: [ReplaySample.Instance] = []
        for (index, (address, json)) in events.enumerated() {
            let entry = Entry(
                seq: UInt64(index + 1), epoch: 1, kind: .event, codec: .json, origin: 1, session: 1, submission: UInt64(index + 1),
                submittedAt: 0, committedAt: 1_000, address: address, payload: Array(json.utf8)
            )
            replicas.apply(entry, runEffects: false)
            if index == 1 { start = Self.instances(replicas.exportStates(), registry) }
            if index >= 2 { recorded.append(entry) }
        }
        return ReplaySample(
            from: 3, through: 6, flows: [:], start: start, entries: recorded.map(ReplaySample.Record.init), end: Self.instances(replicas.exportStates(), registry)
        )
    }()

    static func instances(_ records: [SnapshotChunkMessage.Instance], _ registry: FlowRegistry) -> [ReplaySample.Instance] {
        records.map { try! ReplaySample.Instance($0, registry: registry) }
    }

    @Test func theBuildThatRecordedItPasses() throws {
        let report = ReplayCheck(registry: Self.registry(TallyV1.self)).run(Self.sample)
        #expect(report.passed && report.entries == 4 && report.instances == 2, "\(report)")
    }

    @Test func aCompatibleReleaseWithItsStepsPasses() {
        let report = ReplayCheck(registry: Self.registry(TallyV2.self)).run(Self.sample)
        #expect(report.passed, "\(report)")
    }

    @Test func aCaseRemovedWithoutAStepFailsOnTheEntriesThatUsedIt() {
        let report = ReplayCheck(registry: Self.registry(TallyWithoutClear.self)).run(Self.sample)
        #expect(!report.passed)
        #expect(report.undecodable.map(\.seq) == [4], "\(report)")
        #expect(report.undecodable.first?.reason.contains("clear") == true, "\(report)")
        #expect(report.mismatches.isEmpty, "an instance whose entry did not read is not compared: \(report)")
        #expect(report.description.hasPrefix("FAILED: 4 entries replayed over 2 instances; 1 entries do not decode"), "\(report)")
    }

    @Test func aChangeThatStillDecodesFailsOnTheStates() throws {
        let report = ReplayCheck(registry: Self.registry(TallyHalving.self)).run(Self.sample)
        #expect(report.undecodable.isEmpty)
        let mismatch = try #require(report.mismatches.first, "\(report)")
        #expect(report.mismatches.count == 1 && mismatch.address == "tally/a", "\(report)")
        #expect(mismatch.recordedState == #"{"count":4}"# && mismatch.replayedState == #"{"count":7}"#, "\(report)")
    }

    @Test func aSampleSurvivesItsFileAndAFileThatIsNotOneIsNamed() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("replay-sample-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Self.sample.encoded().write(to: url)
        #expect(try ReplaySample(contentsOf: url) == Self.sample)
        try Data(#"{"format":"something else"}"#.utf8).write(to: url)
        let error = #expect(throws: ProtocolError.self) { try ReplaySample(contentsOf: url) }
        #expect(error?.message.contains("is not a FlowKit replay sample") == true, "\(String(describing: error))")
    }
}
