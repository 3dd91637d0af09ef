import Clocks
import Dependencies
import FlowKitCore

/// The search field of the article Effects (FlowKit.docc): every keystroke starts a search that captures the text, filter and sort
/// order, and cancels the search still in flight.
public struct SearchFlow: Flow {
    public enum Filter: String, Codable, Equatable, Sendable { case all, shortTitles, longTitles }
    public enum SortOrder: String, Codable, Equatable, Sendable { case ascending, descending }

    public struct State: Codable, Hashable, Sendable {
        public var searchText: String
        public var filter: Filter
        public var sortOrder: SortOrder
        public var results: [String]
        public var errorMessage: String?

        public init(
            searchText: String = "",
            filter: Filter = .all,
            sortOrder: SortOrder = .ascending,
            results: [String] = [],
            errorMessage: String? = nil
        ) {
            self.searchText = searchText
            self.filter = filter
            self.sortOrder = sortOrder
            self.results = results
            self.errorMessage = errorMessage
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case searchTextChanged(String)
        case filterChanged(Filter)
        case sortOrderChanged(SortOrder)
        case searchResults([String])
        case searchFailed(String)
    }

    enum CancelID { case search }

    /// How long the search waits for typing to pause; the article uses 300 ms.
    public static let debounce: Duration = .milliseconds(300)

    @Dependency(\.continuousClock) var clock
    @Dependency(\.searchClient) var searchClient

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .searchTextChanged(let text):
            state.searchText = text
            return search(state)
        case .filterChanged(let filter):
            state.filter = filter
            return search(state)
        case .sortOrderChanged(let sortOrder):
            state.sortOrder = sortOrder
            return search(state)
        case .searchResults(let results):
            state.results = results
            state.errorMessage = nil
            return .none
        case .searchFailed(let message):
            state.errorMessage = message
            return .none
        }
    }

    private func search(_ state: State) -> Effect<Event> {
        .run { [text = state.searchText, filter = state.filter, sortOrder = state.sortOrder] send in
            try await self.clock.sleep(for: Self.debounce)
            let results = try await self.searchClient.search(text, filter, sortOrder)
            await send(.searchResults(results))
        } catch: { error, send in
            await send(.searchFailed("\(error)"))
        }
        .cancellable(id: CancelID.search, cancelInFlight: true)
    }
}

/// Searches a catalogue of titles.
public struct SearchClient: Sendable {
    public var search: @Sendable (_ text: String, _ filter: SearchFlow.Filter, _ sortOrder: SearchFlow.SortOrder) async throws -> [String]

    public init(
        search: @escaping @Sendable (String, SearchFlow.Filter, SearchFlow.SortOrder) async throws -> [String]
    ) {
        self.search = search
    }
}

extension SearchClient: DependencyKey {
    /// Searches the built-in catalogue of film titles.
    public static let liveValue = SearchClient { text, filter, sortOrder in
        let needle = text.lowercased()
        let matches = Catalogue.titles.filter { title in
            guard needle.isEmpty || title.lowercased().contains(needle) else { return false }
            switch filter {
            case .all: return true
            case .shortTitles: return title.count <= 12
            case .longTitles: return title.count > 12
            }
        }
        return sortOrder == .ascending ? matches.sorted() : matches.sorted(by: >)
    }

    public static let testValue = SearchClient { _, _, _ in
        throw UnimplementedDependency(name: "SearchClient.search")
    }
}

extension DependencyValues {
    /// The client ``SearchFlow`` searches with.
    public var searchClient: SearchClient {
        get { self[SearchClient.self] }
        set { self[SearchClient.self] = newValue }
    }
}

extension SearchFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] {
        [.searchTextChanged("mat"), .filterChanged(.shortTitles), .sortOrderChanged(.descending), .searchResults(["The Matrix"]), .searchFailed("offline")]
    }

}
