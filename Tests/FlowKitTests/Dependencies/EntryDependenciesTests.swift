import Dependencies
import FlowKit
import FlowKitTesting
import Foundation
import Testing

/// A reducer written the TCA way: it reads `uuid`, `date` and random numbers.
struct TodosFlow: Flow {
    struct Todo: Codable, Equatable, Sendable {
        var id: UUID
        var title: String
        var createdAt: Date
        var priority: Int
    }
    struct State: Codable, Equatable, Sendable {
        var todos: [Todo] = []
        /// What an effect drew, sent back.
        var fromEffect: [UUID] = []
    }
    enum Event: Codable, Equatable, Sendable {
        case add(String)
        case addTwo(String)
        case askEffect
        case effectDrew(UUID)
    }

    @Dependency(\.uuid) var uuid
    @Dependency(\.date.now) var now
    @Dependency(\.withRandomNumberGenerator) var withRandomNumberGenerator

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .add(let title):
            let priority = withRandomNumberGenerator { Int.random(in: 1...1_000_000, using: &$0) }
            state.todos.append(Todo(id: uuid(), title: title, createdAt: now, priority: priority))
            return .none
        case .addTwo(let title):
            state.todos.append(Todo(id: uuid(), title: title, createdAt: now, priority: 0))
            return .send(.add(title + " again"))
        case .askEffect:
            return .run { [uuid] send in await send(.effectDrew(uuid())) }
        case .effectDrew(let id):
            state.fromEffect.append(id)
            return .none
        }
    }
}

/// A reducer that reads the process's own values: what no cluster can replicate.
struct CarelessFlow: Flow {
    struct State: Equatable, Sendable { var ids: [UUID] = [] }
    enum Event: Equatable, Sendable { case add }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        state.ids.append(UUID())
        return .none
    }
}

@Suite struct EntryDependenciesTests {
    /// In a store, each event's reducer reads real values: distinct version-4 UUIDs, the time the
    /// event arrived, random numbers that differ; a `.send` follow-up draws on after its event.
    @Test func aStoreGivesTheReducerRealValuesPerEvent() async {
        let store = FlowStore(initialState: TodosFlow.State()) { TodosFlow() }
        let before = Date()
        for title in ["a", "b", "c"] { await store.emit(.add(title)).finish() }
        await store.emit(.addTwo("d")).finish()
        let todos = await store.state.todos
        #expect(Set(todos.map(\.id)).count == 5, "distinct UUIDs: \(todos.map(\.id))")
        #expect(todos.allSatisfy { $0.id.uuidString.dropFirst(14).first == "4" }, "version-4 UUIDs")
        #expect(todos.allSatisfy { $0.createdAt >= before.addingTimeInterval(-0.001) && $0.createdAt <= Date() })
        #expect(Set(todos.prefix(3).map(\.priority)).count > 1, "random numbers that differ")
        #expect(todos[3].createdAt == todos[4].createdAt, "a follow-up is part of its event: the same time")
    }

    /// The same events with the same stamps give the same state: what every replica of a cluster
    /// relies on. Two test stores stand for two replicas.
    @Test func theSameEntriesGiveTheSameStateWhereverTheyAreReduced() async {
        func run() async -> TodosFlow.State {
            let store = TestStore(initialState: TodosFlow.State()) { TodosFlow() }
            store.exhaustivity = .off
            await store.send(.add("a"))
            await store.send(.add("b"))
            return await store.state
        }
        let (first, second) = (await run(), await run())
        #expect(first == second)
        #expect(first.todos[0].id != first.todos[1].id)
        #expect(first.todos[0].createdAt == Date(timeIntervalSince1970: 1_767_225_601), "the test store's time: 2026-01-01 plus a second an event")
    }

    /// What a store sets wins over the entry's values, as in TCA: a test fixes them.
    @Test func aTestFixesTheValuesAsInTCA() async {
        let store = TestStore(initialState: TodosFlow.State()) { TodosFlow() } withDependencies: {
            $0.uuid = .incrementing
            $0.date = .constant(Date(timeIntervalSince1970: 1_234_567_890))
            $0.withRandomNumberGenerator = WithRandomNumberGenerator(LCRNG(seed: 7))
        }
        var rng = LCRNG(seed: 7)
        let priority = Int.random(in: 1...1_000_000, using: &rng)
        await store.send(.add("a")) {
            $0.todos = [.init(id: UUID(0), title: "a", createdAt: Date(timeIntervalSince1970: 1_234_567_890), priority: priority)]
        }
    }

    /// Effects run once, on one node: they keep the process's values, not the entry's.
    @Test func anEffectDrawsTheProcesssValuesNotTheEntrys() async {
        let store = FlowStore(initialState: TodosFlow.State()) { TodosFlow() }
        await store.emit(.add("a")).finish()
        await store.emit(.askEffect).finish()
        let state = await store.state
        #expect(state.fromEffect.count == 1)
        #expect(state.fromEffect.first != state.todos.first?.id)
    }

    /// A reducer that reads `UUID()` itself fails its test, with the flow named, before it meets a
    /// cluster.
    @Test func aReducerThatReadsTheProcesssValuesFailsItsTest() async {
        let store = TestStore(initialState: CarelessFlow.State()) { CarelessFlow() }
        store.exhaustivity = .off
        await withKnownIssue {
            await store.send(.add)
        } matching: { issue in
            issue.description.contains("The reducer of CarelessFlow is not deterministic")
        }
    }
}

/// A linear congruential generator, for a test to fix the random numbers.
struct LCRNG: RandomNumberGenerator, Sendable {
    var seed: UInt64
    mutating func next() -> UInt64 {
        seed = 2_862_933_555_777_941_757 &* seed &+ 3_037_000_493
        return seed
    }
}
