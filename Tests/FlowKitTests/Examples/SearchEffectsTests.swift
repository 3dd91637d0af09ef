import Clocks
import FlowKit
import FlowKitExamples
import FlowKitTesting
import Synchronization
import Testing

/// The article Effects' "Capturing Multiple Values": a search that captures text, filter and sort order and
/// replaces the search in flight.
@Suite struct SearchEffectsTests {
    struct Query: Equatable, Sendable {
        var text: String
        var filter: SearchFlow.Filter
        var sortOrder: SearchFlow.SortOrder
    }

    @Test func searchCapturesValuesAndTheLatestSearchWins() async {
        let clock = TestClock()
        let queries = Mutex<[Query]>([])
        let store = TestStore(initialState: SearchFlow.State()) {
            SearchFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0.searchClient = SearchClient { text, filter, sortOrder in
                queries.withLock { $0.append(Query(text: text, filter: filter, sortOrder: sortOrder)) }
                return ["\(text) (\(filter.rawValue), \(sortOrder.rawValue))"]
            }
        }

        await store.send(.searchTextChanged("b")) { $0.searchText = "b" }
        await clock.advance(by: .milliseconds(100))
        await store.send(.searchTextChanged("bl")) { $0.searchText = "bl" }
        await store.send(.sortOrderChanged(.descending)) { $0.sortOrder = .descending }
        await clock.advance(by: SearchFlow.debounce)
        await store.receive(.searchResults(["bl (all, descending)"])) {
            $0.results = ["bl (all, descending)"]
        }
        await store.finish()
        // The two earlier searches were cancelled while they waited: only the last one ran, with the
        // values captured when it was returned.
        #expect(queries.withLock { $0 } == [Query(text: "bl", filter: .all, sortOrder: .descending)])
    }

    @Test func aFailingSearchIsTurnedIntoAnEventByItsCatchHandler() async {
        struct Offline: Error, CustomStringConvertible { var description: String { "offline" } }
        let clock = TestClock()
        let store = TestStore(initialState: SearchFlow.State()) {
            SearchFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0.searchClient = SearchClient { _, _, _ in throw Offline() }
        }

        await store.send(.searchTextChanged("x")) { $0.searchText = "x" }
        await clock.advance(by: SearchFlow.debounce)
        await store.receive(.searchFailed("offline")) { $0.errorMessage = "offline" }
        await store.finish()
    }

    @Test func liveCatalogueSearchFiltersAndSorts() async throws {
        let results = try await SearchClient.liveValue.search("in", .shortTitles, .ascending)
        #expect(results == ["Chinatown", "Inception", "Rear Window"])
    }
}
