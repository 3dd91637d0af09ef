import FlowKitCluster
import Testing

/// A client's errors carry a code to switch on and a sentence a person can act on, as every
/// error type of FlowKit does.
@Suite struct ClusterClientErrorTests {
    @Test func eachErrorHasItsCodeAndSaysWhatToCheck() {
        let timedOut = ClusterClientError.timedOut(.seconds(2))
        #expect(timedOut.code == .timedOut && "\(timedOut)".contains("is the node running"))
        #expect(ClusterClientError.closed.code == .closed)
        let unexpected = ClusterClientError.unexpectedReply("STATE")
        #expect(unexpected.code == .unexpectedReply && unexpected.message.contains("STATE"))
        let codes: Set<ClusterClientError.Code> = [timedOut.code, ClusterClientError.closed.code, unexpected.code]
        #expect(codes.count == 3 && codes.map(\.description).sorted() == ["closed", "timedOut", "unexpectedReply"])
    }
}
