import ArgumentParser
import FlowKitCore
import FlowKitExamples

/// `flowkit demo`: a tour of flows and effects in one process, on the real clock.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "A tour of flows and effects in one process.",
        discussion: """
            Runs the built-in example flows locally: a counter with a subscriber, a timer that ticks \
            and is cancelled, a debounced search where the latest keystroke wins, a stream that is \
            stopped, and the movie list moving between its states.
            """
    )

    @Option(help: "How many timer ticks to wait for before cancelling the timer.")
    var ticks = 3

    func run() async throws {
        await counter()
        await timer()
        await search()
        await streaming()
        await movies()
    }

    private func counter() async {
        print("── counter: state changes only through events; a subscriber sees each one")
        let store = FlowStore(initialState: CounterFlow.State(), flow: CounterFlow())
        let subscription = await store.subscribe { state in print("   state.count = \(state.count)") }
        await store.emit(.increment)
        await store.emit(.add(41))
        await store.emit(.decrement)
        subscription.cancel()
        print("   digest \((try? await store.stateDigest())?.description ?? "-")")
    }

    private func timer() async {
        print("── timer: a .run effect on the injected clock, stopped with .cancel(id:)")
        let store = FlowStore(initialState: TimerFlow.State()) { TimerFlow() }
        let states = await store.states(bufferingPolicy: .unbounded)
        await store.emit(.toggleTimerButtonTapped)
        for await state in states where state.secondsElapsed > 0 {
            print("   tick: \(state.secondsElapsed) s")
            if state.secondsElapsed >= ticks { break }
        }
        await store.emit(.stop)
        await store.waitForEffects()
        print("   stopped; effects still running: \(await store.runningEffectCount)")
    }

    private func search() async {
        print("── search: each keystroke cancels the search in flight (cancelInFlight)")
        let store = FlowStore(initialState: SearchFlow.State()) { SearchFlow() }
        var last: EmitTask?
        for text in ["m", "ma", "mat"] {
            print("   typed \"\(text)\"")
            last = await store.emit(.searchTextChanged(text))
        }
        await last?.finish()
        print("   results for \"\(await store.state.searchText)\": \(await store.state.results)")
    }

    private func streaming() async {
        print("── streaming: a long-running effect stopped by another event")
        let store = FlowStore(initialState: StreamingFlow.State()) { StreamingFlow() }
        let states = await store.states(bufferingPolicy: .unbounded)
        await store.emit(.startStreaming)
        for await state in states where state.received.count >= 2 { break }
        await store.emit(.stopStreaming)
        await store.waitForEffects()
        print("   received \(await store.state.received), streaming: \(await store.state.isStreaming)")
    }

    private func movies() async {
        print("── movie list: initial → loaded, and → errored for a page that does not exist")
        let store = FlowStore(initialState: MovieListFlow.State.initial) { MovieListFlow() }
        await store.emit(.fetchMovies(page: 1)).finish()
        if case .loaded(let movies) = await store.state {
            print("   loaded \(movies.count) movies: \(movies.prefix(3).map(\.title).joined(separator: ", "))…")
        }
        await store.emit(.fetchMovies(page: 9)).finish()
        print("   \(await store.state)")
    }
}
