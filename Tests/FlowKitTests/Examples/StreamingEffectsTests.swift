import Clocks
import FlowKit
import FlowKitExamples
import FlowKitTesting
import Testing

/// The article Effects' ".cancellable for Long-Running Effects": a stream restarted with cancelInFlight and
/// stopped with `.cancel(id:)`.
@Suite struct StreamingEffectsTests {
    @Test func streamRunsUntilStopped() async {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: String.self)
        let store = TestStore(initialState: StreamingFlow.State()) {
            StreamingFlow()
        } withDependencies: {
            $0.streamClient = StreamClient { stream }
        }

        await store.send(.startStreaming) { $0.isStreaming = true }
        continuation.yield("a")
        await store.receive(.didReceiveData("a")) { $0.received = ["a"] }
        continuation.yield("b")
        await store.receive(.didReceiveData("b")) { $0.received = ["a", "b"] }
        await store.send(.stopStreaming) { $0.isStreaming = false }
        // The effect was cancelled: data yielded now never reaches the flow.
        continuation.yield("late")
        await store.finish()
    }

    @Test func restartingCancelsTheStreamInFlight() async {
        let clock = TestClock()
        let store = TestStore(initialState: StreamingFlow.State()) {
            StreamingFlow()
        } withDependencies: {
            $0.continuousClock = clock
            $0.streamClient = .liveValue
        }

        await store.send(.startStreaming) { $0.isStreaming = true }
        await clock.advance(by: .seconds(1))
        await store.receive(.didReceiveData("chunk 1")) { $0.received = ["chunk 1"] }
        // A second start cancels the first stream; the new stream counts from 1 again.
        await store.send(.startStreaming)
        await clock.advance(by: .seconds(1))
        await store.receive(.didReceiveData("chunk 1")) { $0.received = ["chunk 1", "chunk 1"] }
        await store.send(.stopStreaming) { $0.isStreaming = false }
        await store.finish()
    }

    @Test func aStreamThatThrowsIsCaught() async {
        struct Dropped: Error, CustomStringConvertible { var description: String { "connection dropped" } }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: String.self)
        let store = TestStore(initialState: StreamingFlow.State()) {
            StreamingFlow()
        } withDependencies: {
            $0.streamClient = StreamClient { stream }
        }

        await store.send(.startStreaming) { $0.isStreaming = true }
        continuation.finish(throwing: Dropped())
        await store.receive(.streamFailed("connection dropped")) {
            $0.isStreaming = false
            $0.errorMessage = "connection dropped"
        }
        await store.finish()
    }
}
