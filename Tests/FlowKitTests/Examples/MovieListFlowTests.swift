import FlowKit
import FlowKitExamples
import FlowKitTesting
import Testing

/// FlowKitExamples' movie list (the article "Introduction to Flows" as a replicated flow) with its initial, loaded and errored states.
@Suite struct MovieListFlowTests {
    @Test func fetchingMovesFromInitialToLoadedAndResetReturns() async {
        let movies = [MovieListFlow.Movie(id: 1, title: "Alien", synopsis: "In space.")]
        let store = TestStore(initialState: MovieListFlow.State.initial) {
            MovieListFlow()
        } withDependencies: {
            $0.movieClient = MovieClient { page in
                #expect(page == 1)
                return movies
            }
        }

        await store.send(.fetchMovies(page: 1))
        await store.receive(.moviesLoaded(movies)) { $0 = .loaded(movies) }
        await store.send(.reset) { $0 = .initial }
        await store.finish()
    }

    @Test func aFailedFetchEndsInTheErroredState() async {
        let store = TestStore(initialState: MovieListFlow.State.initial) {
            MovieListFlow()
        } withDependencies: {
            $0.movieClient = .liveValue
        }

        await store.send(.fetchMovies(page: 99))
        await store.receive(.moviesFailed("page 99 does not exist")) { $0 = .errored("page 99 does not exist") }
        await store.finish()
    }

    @Test func subscribersSeeEveryStateThroughTheStore() async {
        let store = FlowStore(initialState: MovieListFlow.State.initial) {
            MovieListFlow()
        } withDependencies: {
            $0.movieClient = .liveValue
        }
        let states = await store.states(bufferingPolicy: .unbounded)
        await store.emit(.fetchMovies(page: 1)).finish()
        await store.emit(.reset)
        await store.shutDown()

        var seen: [MovieListFlow.State] = []
        for await state in states { seen.append(state) }
        guard seen.count == 4, case .loaded(let movies) = seen[2] else {
            Issue.record("unexpected states: \(seen)")
            return
        }
        #expect(seen[0] == .initial)
        #expect(seen[1] == .initial)  // fetchMovies itself changes nothing
        #expect(movies.count == 10)
        #expect(seen[3] == .initial)
    }
}
