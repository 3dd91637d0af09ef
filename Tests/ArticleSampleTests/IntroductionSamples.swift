import FlowKit
import Foundation

// The code samples of the article "Introduction to Flows"
// (Sources/FlowKit/FlowKit.docc/IntroductionToFlows.md) that are not SwiftUI, as the document
// writes them, between the lines "verbatim" and "end". The document's MVVM samples (the
// `ObservableObject` view model and the SwiftUI views) are what it argues against, and need
// Combine and SwiftUI; `IntroductionSampleTests` holds the non-SwiftUI half of its `StatefulView`.

// verbatim: the data model (its `...`, the rest of the API's fields, left out; public, as the
// public flow below needs)
public struct Movie: Identifiable, Hashable {
    public var id: UUID
    public var title: String
    public var posterImage: URL
    public var synopsis: String
}
// end

/// The flow of the document's "Introducing flows", verbatim but for the changes Swift 6 and the
/// document's own text force:
///
/// - `[Movies]` is `[Movie]`: the document declares `Movie` and spells it `Movies` here (a typo).
/// - `errored(Error)` carries a `MovieError`: `State` is `Equatable & Hashable`, which a case
///   holding `any Error` cannot be; `getMovies` returns `Result<[Movie], MovieError>` to match.
/// - `switch getMovies(at: page)` is `switch await getMovies(at: page)`: the function is `async`.
/// - `getMovies`'s `...` is a body: it asks the `movieClient` dependency.
/// - `Movie` and `MovieError` are `public`, as a public actor's `State` needs.
/// - `State` and `Event` are `Sendable`, in extensions below: state that reaches the main actor (a
///   view's `stateChanged(_:)`) must be, and so must events that generic code passes along.
public actor MovieListFlow: StatefulFlowProviding {
    // verbatim: "Introducing flows"
    public enum State: Equatable, Hashable {
        case initial
        case loaded([Movie])
        case errored(MovieError)
    }

    public enum Event {
        case fetchMovies(page: Int)
        case reset
    }

    public var state: State { internalState }
    public var stateSubscribers = [((State) -> Void)]()
    private var internalState = State.initial {
        didSet {
            stateSubscribers.forEach { callback in callback(internalState) }
        }
    }

    private func getMovies(at page: Int) async -> Result<[Movie], MovieError> {
        await movieClient.fetch(page)
    }
    // end

    @Dependency(\.movieClient) private var movieClient

    // verbatim: "The emit(_:) ... for our movie flow"
    public func emit(_ event: Event) async {
        switch event {
            case .fetchMovies(let page):
                await loadMovies(page: page)
            case .reset:
                internalState = .initial
        }
    }

    private func loadMovies(page: Int) async {
        switch await getMovies(at: page) {
            case .success(let movies):
                internalState = .loaded(movies)
            case .failure(let error):
                internalState = .errored(error)
        }
    }
    // end
}

extension MovieListFlow.State: Sendable {}
extension MovieListFlow.Event: Sendable {}
extension Movie: Sendable {}

/// Why movies could not be loaded: an `Error` that is also `Hashable`, so the state can hold it.
public struct MovieError: Error, Hashable, Sendable {
    public var message: String
}

/// Where `MovieListFlow` gets its movies, one page at a time.
public struct MovieClient: Sendable {
    public var fetch: @Sendable (_ page: Int) async -> Result<[Movie], MovieError>
}

extension MovieClient: TestDependencyKey {
    public static let testValue = MovieClient(fetch: { _ in
        reportIssue("movieClient.fetch is not set")
        return .failure(MovieError(message: "unset"))
    })
}

extension DependencyValues {
    var movieClient: MovieClient {
        get { self[MovieClient.self] }
        set { self[MovieClient.self] = newValue }
    }
}
