import Clocks
import Dependencies
import FlowKitCore

/// The streaming effect of the article Effects (FlowKit.docc): a long-running stream, restarted with `cancelInFlight` and stopped
/// with ``Effect/cancel(id:)``.
public struct StreamingFlow: Flow {
    public struct State: Codable, Hashable, Sendable {
        public var isStreaming: Bool
        public var received: [String]
        public var errorMessage: String?

        public init(isStreaming: Bool = false, received: [String] = [], errorMessage: String? = nil) {
            self.isStreaming = isStreaming
            self.received = received
            self.errorMessage = errorMessage
        }
    }

    public enum Event: Codable, Equatable, Sendable {
        case startStreaming
        case stopStreaming
        case didReceiveData(String)
        case streamFailed(String)
    }

    @Dependency(\.streamClient) var client

    public init() {}

    public func reduce(into state: inout State, event: Event) -> Effect<Event> {
        switch event {
        case .startStreaming:
            state.isStreaming = true
            return .run { send in
                for try await data in client.stream() {
                    await send(.didReceiveData(data))
                }
            } catch: { error, send in
                await send(.streamFailed("\(error)"))
            }
            .cancellable(id: "data-stream", cancelInFlight: true)

        case .stopStreaming:
            state.isStreaming = false
            return .cancel(id: "data-stream")

        case .didReceiveData(let data):
            state.received.append(data)
            return .none

        case .streamFailed(let message):
            state.isStreaming = false
            state.errorMessage = message
            return .none
        }
    }
}

/// A source of data that arrives over time.
public struct StreamClient: Sendable {
    public var stream: @Sendable () -> AsyncThrowingStream<String, any Error>

    public init(stream: @escaping @Sendable () -> AsyncThrowingStream<String, any Error>) {
        self.stream = stream
    }
}

extension StreamClient: DependencyKey {
    /// Yields `"chunk 1"`, `"chunk 2"`, … once a second on the continuous clock.
    public static var liveValue: StreamClient {
        StreamClient {
            @Dependency(\.continuousClock) var continuousClock
            let clock = continuousClock
            return AsyncThrowingStream { continuation in
                let task = Task {
                    var index = 0
                    for await _ in clock.timer(interval: .seconds(1)) {
                        index += 1
                        continuation.yield("chunk \(index)")
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
    }

    public static let testValue = StreamClient {
        AsyncThrowingStream { $0.finish(throwing: UnimplementedDependency(name: "StreamClient.stream")) }
    }
}

extension DependencyValues {
    /// The client ``StreamingFlow`` streams from.
    public var streamClient: StreamClient {
        get { self[StreamClient.self] }
        set { self[StreamClient.self] = newValue }
    }
}

extension StreamingFlow: ReplicatedFlow {
    public static var initialState: State { State() }
    public static var sampleEvents: [Event] { [.startStreaming, .stopStreaming, .didReceiveData("chunk 1"), .streamFailed("closed")] }

    /// A stream whose node died is opened again at a survivor (a live client would pass where to
    /// start from, `received.count`; this one starts over).
    public static func resume(_ state: State) -> Effect<Event> {
        guard state.isStreaming else { return .none }
        return .run { send in
            @Dependency(\.streamClient) var client
            for try await data in client.stream() {
                await send(.didReceiveData(data))
            }
        } catch: { error, send in
            await send(.streamFailed("\(error)"))
        }
        .cancellable(id: "data-stream", cancelInFlight: true)
    }
}
