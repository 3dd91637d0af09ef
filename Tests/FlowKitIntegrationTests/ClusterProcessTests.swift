import Testing

/// Every test of this target starts processes, and they run one at a time, whoever runs them:
/// `swift test` runs suites side by side, and two clusters on a two-core machine slow each other
/// past their timeouts. `.serialized` here applies to every test of the nested suites.
@Suite("Multi-process", .serialized)
struct MultiProcessTests {}

extension MultiProcessTests {
    /// The cluster as users run it: a `flowkit coordinator` and `flowkit node` processes on
    /// loopback, driven through ``FlowKitCluster/ClusterClient`` and raw ZeroMQ sockets.
    ///
    /// Each test starts its own cluster, so every seq in it is the test's own: a test can check
    /// the exact log head.
    @Suite("Cluster processes", .serialized, .countingFailures, .timeLimit(.minutes(2)))
    struct ClusterProcessTests {}
}

typealias ClusterProcessTests = MultiProcessTests.ClusterProcessTests

