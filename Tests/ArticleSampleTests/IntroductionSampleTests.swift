import FlowKit
import Foundation
import Synchronization
import Testing

/// The article "Introduction to Flows" (FlowKit.docc/IntroductionToFlows.md): its actor flow, its subscribers, and the non-SwiftUI half of
/// its `StatefulView` (``StatefulObserver``), on the hand-written actor and on a ``FlowStore``.
@Suite struct IntroductionSampleTests {
    static let dune = Movie(id: UUID(), title: "Dune", posterImage: URL(string: "https://example.com/dune.jpg")!, synopsis: "Sand.")
    static let alien = Movie(id: UUID(), title: "Alien", posterImage: URL(string: "https://example.com/alien.jpg")!, synopsis: "Space.")

    /// A flow whose client serves page 1 and fails every other page.
    static func makeFlow() -> MovieListFlow {
        withDependencies {
            $0.movieClient.fetch = { page in
                page == 1 ? .success([dune, alien]) : .failure(MovieError(message: "no page \(page)"))
            }
        } operation: {
            MovieListFlow()
        }
    }

    @Test func emittingEventsMovesTheStateAlongTheDocumentsPaths() async {
        let flow = Self.makeFlow()
        #expect(await flow.state == .initial)
        await flow.emit(.fetchMovies(page: 1))
        #expect(await flow.state == .loaded([Self.dune, Self.alien]))
        await flow.emit(.fetchMovies(page: 2))
        #expect(await flow.state == .errored(MovieError(message: "no page 2")))
        await flow.emit(.reset)
        #expect(await flow.state == .initial)
    }

    @Test func subscribersHearEveryChangeInOrder() async {
        let flow = Self.makeFlow()
        let heard = Recorder<MovieListFlow.State>()
        await flow.subscribe { state in heard.append(state) }
        await flow.emit(.fetchMovies(page: 1))
        await flow.emit(.reset)
        await flow.emit(.fetchMovies(page: 3))
        #expect(heard.values == [.loaded([Self.dune, Self.alien]), .initial, .errored(MovieError(message: "no page 3"))])
    }

    @Test func asyncSubscribersHearEveryChangeInOrderOffTheActor() async {
        let flow = Self.makeFlow()
        let (heard, continuation) = AsyncStream.makeStream(of: MovieListFlow.State.self)
        await flow.subscribe { @Sendable state in
            await Task.yield()  // a handler that awaits still gets the changes one at a time, in order
            continuation.yield(state)
        }
        await flow.emit(.fetchMovies(page: 1))
        await flow.emit(.reset)
        await flow.emit(.fetchMovies(page: 9))
        var iterator = heard.makeAsyncIterator()
        #expect(await iterator.next() == .loaded([Self.dune, Self.alien]))
        #expect(await iterator.next() == .initial)
        #expect(await iterator.next() == .errored(MovieError(message: "no page 9")))
    }

    @Test @MainActor func anObserverGetsTheCurrentStateThenEveryChangeOnTheMainActor() async {
        let flow = Self.makeFlow()
        await flow.emit(.fetchMovies(page: 1))
        let screen = MovieListScreen(flow: flow)
        await screen.observe(flow)
        #expect(await screen.next() == .loaded([Self.dune, Self.alien]))
        #expect(screen.movies == [Self.dune, Self.alien])
        await flow.emit(.fetchMovies(page: 2))
        #expect(await screen.next() == .errored(MovieError(message: "no page 2")))
        // As the document's view does: the error shows over the movies it already has.
        #expect(screen.movies == [Self.dune, Self.alien])
        #expect(screen.errored)
        #expect(screen.movieError as? MovieError == MovieError(message: "no page 2"))
    }

    @Test(.timeLimit(.minutes(1))) @MainActor func anObserverDetachesWhenReleased() async {
        let flow = Self.makeFlow()
        var screen: MovieListScreen? = MovieListScreen(flow: flow)
        let observing = await screen!.observe(flow)
        _ = await screen!.next()
        weak let released = screen
        screen = nil
        #expect(released == nil)
        // The next change finds the observer gone, and the observing task ends.
        await flow.emit(.reset)
        await observing.value
    }

    @Test func aFlowStoreIsAStatefulFlowToo() async {
        let store = FlowStore(initialState: Tally.State(), flow: Tally())
        let heard = Recorder<Tally.State>()
        await store.subscribe(perform: { state in heard.append(state) })
        await store.emit(.add(2))
        await store.emit(.add(3))
        #expect(heard.values.map(\.total) == [2, 5])
        let changes = await store.stateChanges()
        var iterator = changes.makeAsyncIterator()
        #expect(await iterator.next()?.total == 5)
        await store.emit(.add(1))
        #expect(await iterator.next()?.total == 6)
        await store.shutDown()
    }

    /// Any `StatefulFlowProviding` works where an actor flow is expected: generic code such as an
    /// observer takes a hand-written actor or a store alike.
    @Test func genericCodeTakesEitherStyle() async {
        func count<Provider: StatefulFlowProviding>(changesOf flow: Provider, after events: [Provider.Event]) async -> Int
        where Provider.Event: Sendable {
            let heard = Recorder<Bool>()
            await flow.subscribe(perform: { _ in heard.append(true) })
            for event in events { await flow.emit(event) }
            return heard.values.count
        }
        #expect(await count(changesOf: Self.makeFlow(), after: [.fetchMovies(page: 1), .reset]) == 2)
        let store = FlowStore(initialState: Tally.State(), flow: Tally())
        #expect(await count(changesOf: store, after: [.add(1), .add(1), .add(1)]) == 3)
        await store.shutDown()
    }
}

/// The document's `MovieListView`, without SwiftUI: what its `stateChanged(_:)` keeps, and a way
/// for the test to wait for each call.
@MainActor final class MovieListScreen: StatefulObserver {
    typealias FlowProvider = MovieListFlow

    var movies = [Movie]()
    var errored = false
    var movieError: (any Error)?
    let flow: MovieListFlow
    private let calls: AsyncStream<MovieListFlow.State>
    private let call: AsyncStream<MovieListFlow.State>.Continuation
    private var iterator: AsyncStream<MovieListFlow.State>.Iterator

    init(flow: MovieListFlow) {
        self.flow = flow
        (calls, call) = AsyncStream.makeStream(of: MovieListFlow.State.self)
        iterator = calls.makeAsyncIterator()
    }

    // verbatim: `stateChanged(_:)` of "Stateful views with flows"
    func stateChanged(_ state: MovieListFlow.State) {
        switch state {
            case .initial:
                movies = []
                movieError = nil
                errored = false
            case .loaded(let newMovies):
                movies = newMovies
                movieError = nil
                errored = false
            case .errored(let error):
                movieError = error
                errored.toggle()
        }
        // end
        call.yield(state)
    }

    /// The state of the next `stateChanged(_:)` call.
    func next() async -> MovieListFlow.State? {
        var iterator = self.iterator
        defer { self.iterator = iterator }
        return await iterator.next(isolation: MainActor.shared)
    }
}

/// A small `Flow` for the store's side of the tests.
struct Tally: Flow {
    struct State: Hashable, Sendable { var total = 0 }
    enum Event: Sendable { case add(Int) }

    func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .add(let amount): state.total += amount
        }
        return .none
    }
}

/// Values appended from any context, read back in order.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Mutex<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.withLock { $0 } }
}
