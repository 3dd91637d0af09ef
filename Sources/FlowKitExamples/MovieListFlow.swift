import Dependencies
import FlowKitCore

/// The movie list of the article Introduction to Flows (FlowKit.docc), as a flow: its states say exactly what the screen can show, and only
/// events move between them.
///
/// The article's `errored(Error)` holds the error's message here, so the state stays `Codable` and
/// `Equatable`, as a replicated state must.
public struct MovieListFlow: Flow {
    public struct Movie: Codable, Equatable, Hashable, Sendable, Identifiable {
        public var id: Int
        public var title: String
        public var synopsis: String

        public init(id: Int, title: String, synopsis: String) {
            self.id = id
            self.title = title
            self.synopsis = synopsis
        }
    }

    public enum State: Codable, Equatable, Hashable, Sendable {
        case initial
        case loaded([Movie])
        case errored(String)
    }

    public enum Event: Codable, Equatable, Sendable {
        case fetchMovies(page: Int)
        case reset
        case moviesLoaded([Movie])
        case moviesFailed(String)
    }

    enum CancelID { case fetch }

    @Dependency(\.movieClient) var movieClient

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .fetchMovies(let page):
            return .run { send in
                await send(.moviesLoaded(try await movieClient.fetchMovies(page)))
            } catch: { error, send in
                await send(.moviesFailed("\(error)"))
            }
            .cancellable(id: CancelID.fetch, cancelInFlight: true)

        case .reset:
            state = .initial
            return .cancel(id: CancelID.fetch)

        case .moviesLoaded(let movies):
            state = .loaded(movies)
            return .none

        case .moviesFailed(let message):
            state = .errored(message)
            return .none
        }
    }
}

/// Fetches pages of movies.
public struct MovieClient: Sendable {
    public var fetchMovies: @Sendable (_ page: Int) async throws -> [MovieListFlow.Movie]

    public init(fetchMovies: @escaping @Sendable (Int) async throws -> [MovieListFlow.Movie]) {
        self.fetchMovies = fetchMovies
    }
}

/// The error the live movie client throws for a page past the end of the catalogue.
public struct PageNotFound: Error, CustomStringConvertible {
    public var page: Int
    public var description: String { "page \(page) does not exist" }
}

extension MovieClient: DependencyKey {
    /// Serves the built-in catalogue, ten titles a page.
    public static let liveValue = MovieClient { page in
        let pageSize = 10
        let start = (page - 1) * pageSize
        guard page >= 1, start < Catalogue.titles.count else { throw PageNotFound(page: page) }
        return Catalogue.titles[start..<min(start + pageSize, Catalogue.titles.count)].enumerated().map {
            MovieListFlow.Movie(id: start + $0.offset + 1, title: $0.element, synopsis: "A film called \($0.element).")
        }
    }

    public static let testValue = MovieClient { _ in throw UnimplementedDependency(name: "MovieClient.fetchMovies") }
}

extension DependencyValues {
    /// The client ``MovieListFlow`` fetches with.
    public var movieClient: MovieClient {
        get { self[MovieClient.self] }
        set { self[MovieClient.self] = newValue }
    }
}

extension MovieListFlow: ReplicatedFlow {
    public static var initialState: State { .initial }
    public static var flowName: String { "movies" }
    public static var sampleEvents: [Event] {
        [.fetchMovies(page: 1), .reset, .moviesLoaded([Movie(id: 1, title: "Alien", synopsis: "In space no one can hear you scream.")]), .moviesFailed("page 9 not found")]
    }

}
