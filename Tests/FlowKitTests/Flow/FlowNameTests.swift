import FlowKit
import FlowKitExamples
import Testing

/// A replicated flow's default name in addresses comes from its type's name.
@Suite struct FlowNameTests {
    struct ChatRoomFlow: ReplicatedFlow {
        typealias State = Int
        typealias Event = Int
        static var initialState: Int { 0 }
        func reduce(into state: inout Int, event: Int) -> Effect<Int> { .none }
    }

    struct HTTPProxyFlow: ReplicatedFlow {
        typealias State = Int
        typealias Event = Int
        static var initialState: Int { 0 }
        func reduce(into state: inout Int, event: Int) -> Effect<Int> { .none }
    }

    struct Flow2Flow: ReplicatedFlow {
        typealias State = Int
        typealias Event = Int
        static var initialState: Int { 0 }
        func reduce(into state: inout Int, event: Int) -> Effect<Int> { .none }
    }

    @Test func theTypeNameWithoutFlowInKebabCase() {
        #expect(CounterFlow.flowName == "counter")
        #expect(ChatRoomFlow.flowName == "chat-room")
        #expect(HTTPProxyFlow.flowName == "http-proxy")
        #expect(Flow2Flow.flowName == "flow2")
    }

    @Test func aFlowCanNameItself() {
        #expect(KeyValueFlow.flowName == "kv")
        #expect(MovieListFlow.flowName == "movies")
    }
}
