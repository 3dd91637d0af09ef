/// Something that shows a flow's state and reacts to each change: the platform-neutral half of the
/// original FlowKit's `StatefulView` (<doc:IntroductionToFlows>).
///
/// `StatefulView` is a SwiftUI view, and SwiftUI exists only on Apple's platforms; what it adds to a
/// view is this: one `stateChanged(_:)` that receives the flow's state on the main actor, first as
/// it is and then after every change, in order, so the view keeps its own copies of what it shows.
/// Any main-actor type can be one, a view model, a terminal screen or a SwiftUI view on Apple's
/// platforms:
///
/// ```swift
/// @MainActor final class MovieListScreen: StatefulObserver {
///     let flow = MovieListFlow()
///     var movies: [Movie] = []
///
///     func stateChanged(_ state: MovieListFlow.State) {
///         if case .loaded(let loaded) = state { movies = loaded } else { movies = [] }
///     }
/// }
///
/// let screen = MovieListScreen()
/// await screen.observe(screen.flow)
/// await screen.flow.emit(.fetchMovies(page: 1))
/// ```
///
/// - Important: Never emit to the flow from ``stateChanged(_:)``: that loops.
@MainActor
public protocol StatefulObserver: AnyObject {
    /// The flow whose state this observes.
    associatedtype FlowProvider: StatefulFlowProviding where FlowProvider.State: Sendable

    /// Receives the flow's state: its current one when observing starts, then each new one.
    func stateChanged(_ state: FlowProvider.State)
}

extension StatefulObserver {
    /// Starts observing `flow`: ``stateChanged(_:)`` receives its current state, then every change,
    /// in order, on the main actor, until this observer is released or the returned task is
    /// cancelled. Returns once the subscription is in place.
    @discardableResult
    public func observe(_ flow: FlowProvider) async -> Task<Void, Never> {
        let changes = await flow.stateChanges()
        return Task { @MainActor [weak self] in
            for await state in changes {
                guard let self else { return }
                self.stateChanged(state)
            }
        }
    }
}

extension StatefulFlowProviding where State: Sendable {
    /// The current state, then every change, in order: a subscription as a stream. It lasts as long
    /// as the flow (subscribers cannot be removed from ``stateSubscribers``); stop iterating to stop
    /// receiving.
    public func stateChanges() -> AsyncStream<State> {
        let (changes, continuation) = AsyncStream.makeStream(of: State.self)
        continuation.yield(state)
        stateSubscribers.append { state in continuation.yield(state) }
        return changes
    }
}
