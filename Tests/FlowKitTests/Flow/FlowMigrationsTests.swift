import FlowKit
import Testing

/// A flow's steps from older versions, tested as a user tests them: recorded payloads pinned to
/// what the current build reads.
@Suite struct FlowMigrationsTests {
    /// Version 3 of a counter. Version 1 had `add(Int)` and `reset`, and a state `count`; version 2
    /// renamed `add` to `increment` and labelled its value; version 3 added a reason, split `reset`
    /// into a reset and a note, and keeps a history in its state.
    struct CounterFlow: ReplicatedFlow {
        struct State: Codable, Equatable, Sendable {
            var total = 0
            var history: [String] = []
        }

        enum Event: Codable, Equatable, Sendable {
            case increment(amount: Int, reason: String?)
            case reset
            case note(String)
        }

        static var initialState: State { State() }

        func reduce(into state: inout State, event: Event) -> Effect<Event> {
            switch event {
            case .increment(let amount, _): state.total += amount
            case .reset: state.total = 0
            case .note(let text): state.history.append(text)
            }
            return .none
        }
    }

    enum V1 {
        enum Event: Codable { case add(Int), reset }
        struct State: Codable { var count: Int }
    }

    enum V2 {
        enum Event: Codable { case increment(amount: Int), reset }
        struct State: Codable { var count: Int }
    }

    static let migrations = FlowMigrations<CounterFlow>()
        .events(from: 1, as: V1.Event.self, to: V2.Event.self) { old in
            switch old {
            case .add(let amount): [.increment(amount: amount)]
            case .reset: [.reset]
            }
        }
        .events(from: 2, as: V2.Event.self) { old in
            switch old {
            case .increment(let amount): [.increment(amount: amount, reason: nil)]
            case .reset: [.reset, .note("reset")]
            }
        }
        .state(from: 1, json: { json in json })  // version 2 kept version 1's state
        .state(from: 2, as: V2.State.self) { old in CounterFlow.State(total: old.count, history: []) }

    @Test func anOldEventGoesThroughEveryStepToTheCurrentVersion() throws {
        let migrations = Self.migrations
        #expect(try migrations.events(from: 1, json: Array(#"{"add":{"_0":5}}"#.utf8), to: 3) == [.increment(amount: 5, reason: nil)])
        #expect(try migrations.events(from: 2, json: Array(#"{"increment":{"amount":7}}"#.utf8), to: 3) == [.increment(amount: 7, reason: nil)])
        // A split: one event of version 1 is two of version 3.
        #expect(try migrations.events(from: 1, json: Array(#"{"reset":{}}"#.utf8), to: 3) == [.reset, .note("reset")])
        // The current version's own events need no step.
        #expect(try migrations.events(from: 3, json: Array(#"{"note":{"_0":"hi"}}"#.utf8), to: 3) == [.note("hi")])
    }

    @Test func anOldStateGoesThroughEveryStep() throws {
        let state = try Self.migrations.state(from: 1, json: Array(#"{"count":12}"#.utf8), to: 3)
        #expect(state == CounterFlow.State(total: 12, history: []))
    }

    @Test func whatCannotBeReadSaysWhy() throws {
        let migrations = Self.migrations
        let unknownCase = #expect(throws: FlowMigrationError.self) {
            try migrations.events(from: 1, json: Array(#"{"remove":{"_0":5}}"#.utf8), to: 3)
        }
        #expect(unknownCase?.description.hasPrefix(#"the event {"remove":{"_0":5}} does not decode as version 1's Event"#) == true)
        let newer = #expect(throws: FlowMigrationError.self) { try migrations.events(from: 4, json: Array("{}".utf8), to: 3) }
        #expect(newer?.description == "event of version 4 is newer than this build's version 3")
        let gap = #expect(throws: FlowMigrationError.self) {
            try FlowMigrations<CounterFlow>().events(from: 1, json: Array(#"{"add":{"_0":5}}"#.utf8), to: 3)
        }
        #expect(gap?.description == "no event step from version 1 to 2")
    }

    @Test func theChainIsCheckedForGapsAndRepeats() throws {
        try Self.migrations.check(readingFrom: 1, to: 3)
        let missing = #expect(throws: FlowMigrationError.self) {
            try FlowMigrations<CounterFlow>()
                .events(from: 1, as: V1.Event.self, to: V2.Event.self) { _ in [] }
                .state(from: 1, json: { $0 })
                .check(readingFrom: 1, to: 3)
        }
        #expect(missing?.description == "no event step from version 2; no state step from version 2")
        let twice = #expect(throws: FlowMigrationError.self) {
            try Self.migrations.events(from: 2, json: { [$0] }).check(readingFrom: 1, to: 3)
        }
        #expect(twice?.description == "two event steps from version 2")
        let ahead = #expect(throws: FlowMigrationError.self) { try Self.migrations.check(readingFrom: 1, to: 2) }
        #expect(ahead?.description == "a step from version 2, which is not older than the current version 2")
    }

    /// The versions a build reads are those its steps chain up from; a registration whose steps
    /// do not chain is refused with what is wrong.
    @Test func theVersionsReadAreThoseTheStepsChainFrom() throws {
        #expect(try Self.migrations.readableVersions(upTo: 3) == 1...3)
        #expect(try FlowMigrations<CounterFlow>().readableVersions(upTo: 3) == 3...3)
        let stranded = FlowMigrations<CounterFlow>().events(from: 1, json: { [$0] }).state(from: 1, json: { $0 })
        let error = #expect(throws: FlowMigrationError.self) { try stranded.readableVersions(upTo: 3) }
        #expect(error?.description.contains("steps from version 1 lead nowhere: there is no step from version 2") == true, "\(String(describing: error))")
        let halfStep = FlowMigrations<CounterFlow>().events(from: 2, json: { [$0] })
        let half = #expect(throws: FlowMigrationError.self) { try halfStep.readableVersions(upTo: 3) }
        #expect(half?.description == "no state step from version 2")
    }
}
