import FlowKit
import FlowKitCluster
import FlowKitTools
import Foundation

/// `flowkit` with extra flows that only tests need, given to the command the way a user's own
/// binary gives its flows to `FlowKitCLI.main(registry:)`.
@main
enum Entrypoint {
    static func main() async {
        var registry = FlowKitTools.registry
        registry.register(NondeterministicFlow.self, as: "nondeterministic")
        registry.register(TodosFlow.self, as: "todos")
        registry.register(DiceFlow.self, as: "dice")
        registry.register(TickersFlow.self, as: "tickers")
        registry.register(NotesFlow.self, as: "notes")
        if NotesFlow.version >= 2 {
            registry.register(JournalFlow.self, as: "journal")
        } else {
            registry.register(JournalFlowV1.self, as: "journal")
        }
        await FlowKitTools.main(registry: registry)
    }
}

/// A flow whose version is the testbed build's: `FLOWKIT_TESTBED_BUILD=2` runs the release that
/// raised it to 2, so one binary stands for a user's binary before and after a release. The shapes
/// are the same, so version 2 reads version 1 as it is (a release that changes them brings steps
/// that do, docs/VERSIONING.md). Build 3 dropped the steps from version 1, as a team does once no
/// log holds it: it reads versions 2 and 3 only.
struct NotesFlow: ReplicatedFlow {
    struct State: Codable, Equatable, Sendable { var notes: [String] = [] }
    enum Event: Codable, Equatable, Sendable { case add(String) }

    static var initialState: State { State() }
    static var version: Int { Int(ProcessInfo.processInfo.environment["FLOWKIT_TESTBED_BUILD"] ?? "") ?? 1 }
    static var migrations: FlowMigrations<Self> {
        ((version >= 3 ? 2 : 1)..<max(1, version)).reduce(FlowMigrations()) { $0.eventsUnchanged(from: $1).stateUnchanged(from: $1) }
    }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .add(let note): state.notes.append(note)
        }
        return .none
    }
}

/// The first release of a journal: `journal` runs it in the testbed's build 1.
struct JournalFlowV1: ReplicatedFlow {
    struct State: Codable, Equatable, Sendable { var entries: [String] = [] }
    enum Event: Codable, Equatable, Sendable { case write(String) }

    static var initialState: State { State() }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        if case .write(let text) = event { state.entries.append(text) }
        return .none
    }
}

/// The journal's second release, in the testbed's build 2 and later: the case renamed, its value
/// labelled and an author added; the state's lines carry their author and a count. Its steps read
/// what the first release wrote (docs/VERSIONING.md).
struct JournalFlow: ReplicatedFlow {
    struct Line: Codable, Equatable, Sendable {
        var text: String
        var author: String?
    }
    struct State: Codable, Equatable, Sendable {
        var lines: [Line] = []
        var count = 0
    }
    enum Event: Codable, Equatable, Sendable { case append(text: String, author: String?) }

    static var initialState: State { State() }
    static var version: Int { 2 }
    static var migrations: FlowMigrations<Self> {
        FlowMigrations<Self>()
            .events(from: 1, as: JournalFlowV1.Event.self) { old in
                switch old {
                case .write(let text): [.append(text: text, author: nil)]
                }
            }
            .state(from: 1, as: JournalFlowV1.State.self) { old in
                State(lines: old.entries.map { Line(text: $0, author: nil) }, count: old.entries.count)
            }
    }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .append(let text, let author):
            state.lines.append(Line(text: text, author: author))
            state.count += 1
        }
        return .none
    }
}

/// A flow that breaks the one rule: its reducer reads the process's randomness. Replicas of it
/// diverge, and the cluster must say so.
struct NondeterministicFlow: ReplicatedFlow {
    struct State: Codable, Equatable, Sendable { var value = 0 }
    enum Event: Codable, Equatable, Sendable { case roll }

    static var initialState: State { State() }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.value = Int.random(in: 0..<1_000_000)
        return .none
    }
}

/// A reducer written the TCA way: every todo gets `uuid()` and `now` (`date`). Replicated, every
/// node must compute the same todos.
struct TodosFlow: ReplicatedFlow {
    struct Todo: Codable, Equatable, Sendable {
        var id: UUID
        var title: String
        var createdAt: Date
    }
    struct State: Codable, Equatable, Sendable { var todos: [Todo] = [] }
    enum Event: Codable, Equatable, Sendable { case add(String) }

    static var initialState: State { State() }

    @Dependency(\.uuid) var uuid
    @Dependency(\.date.now) var now

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .add(let title):
            state.todos.append(Todo(id: uuid(), title: title, createdAt: now))
            return .none
        }
    }
}

/// Dice rolled through `withRandomNumberGenerator`, as TCA's docs roll them.
struct DiceFlow: ReplicatedFlow {
    struct State: Codable, Equatable, Sendable { var rolls: [Int] = [] }
    enum Event: Codable, Equatable, Sendable { case roll }

    static var initialState: State { State() }

    @Dependency(\.withRandomNumberGenerator) var withRandomNumberGenerator

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.rolls.append(withRandomNumberGenerator { Int.random(in: 1...6, using: &$0) })
        return .none
    }
}

/// Three tickers whose cancel ids all read `timer`, of three types. `stopFirstLater` cancels
/// `First.timer` from inside running work, which goes through the order as a typed cancel: every
/// node stops that ticker alone, as one process would.
struct TickersFlow: ReplicatedFlow {
    enum First: Hashable, Sendable { case timer }
    enum Second: Hashable, Sendable { case timer }
    struct State: Codable, Equatable, Sendable { var ticks: [String: Int] = [:] }
    enum Event: Codable, Equatable, Sendable {
        case start
        case stopFirstLater
        case tick(String)
    }

    static var initialState: State { State() }

    @Dependency(\.continuousClock) var clock

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .start:
            return .merge(
                ticker("first").cancellable(id: First.timer),
                ticker("second").cancellable(id: Second.timer),
                ticker("string").cancellable(id: "timer")
            )
        case .stopFirstLater:
            return .concatenate(.run { _ in await Task.yield() }, .cancel(id: First.timer))
        case .tick(let name):
            state.ticks[name, default: 0] += 1
            return .none
        }
    }

    private func ticker(_ name: String) -> Effect<Event> {
        .run { [clock] send in
            for await _ in clock.timer(interval: .milliseconds(200)) { await send(.tick(name)) }
        }
    }
}
