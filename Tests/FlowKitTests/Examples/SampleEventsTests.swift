import FlowKitExamples
import Testing

/// Every stock flow lists an event of each kind it takes (`flowkit flows`, and the error for an
/// event that does not decode, show them). Adding a case to a flow's `Event` breaks the switch
/// here until it is listed below, and then this test until the flow's `sampleEvents` has it.
@Suite struct SampleEventsTests {
    static func kinds<Event>(_ events: [Event], _ kind: (Event) -> String) -> Set<String> { Set(events.map(kind)) }

    @Test func everyKindOfEventIsListed() {
        #expect(Self.kinds(CounterFlow.sampleEvents) { switch $0 { case .increment: "increment"; case .decrement: "decrement"; case .add: "add"; case .reset: "reset" } }
            == ["increment", "decrement", "add", "reset"])
        #expect(Self.kinds(KeyValueFlow.sampleEvents) { switch $0 { case .set: "set"; case .remove: "remove"; case .clear: "clear" } } == ["set", "remove", "clear"])
        #expect(Self.kinds(TimerFlow.sampleEvents) { switch $0 { case .toggleTimerButtonTapped: "toggle"; case .timerTick: "tick"; case .stop: "stop" } }
            == ["toggle", "tick", "stop"])
        #expect(Self.kinds(CountdownFlow.sampleEvents) { switch $0 { case .startCountdown: "start"; case .timerTick: "tick"; case .timerCompleted: "completed" } }
            == ["start", "tick", "completed"])
        #expect(
            Self.kinds(SearchFlow.sampleEvents) {
                switch $0 {
                case .searchTextChanged: "text"; case .filterChanged: "filter"; case .sortOrderChanged: "sort"
                case .searchResults: "results"; case .searchFailed: "failed"
                }
            } == ["text", "filter", "sort", "results", "failed"]
        )
        #expect(
            Self.kinds(StreamingFlow.sampleEvents) {
                switch $0 { case .startStreaming: "start"; case .stopStreaming: "stop"; case .didReceiveData: "data"; case .streamFailed: "failed" }
            } == ["start", "stop", "data", "failed"]
        )
        #expect(
            Self.kinds(MovieListFlow.sampleEvents) {
                switch $0 { case .fetchMovies: "fetch"; case .reset: "reset"; case .moviesLoaded: "loaded"; case .moviesFailed: "failed" }
            } == ["fetch", "reset", "loaded", "failed"]
        )
        #expect(Self.kinds(LedgerFlow.sampleEvents) { switch $0 { case .record: "record" } } == ["record"])
    }
}
