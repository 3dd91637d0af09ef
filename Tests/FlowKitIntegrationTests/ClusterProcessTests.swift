import Testing

/// The cluster as users run it: a `flowkit coordinator` and `flowkit node` processes on loopback,
/// driven through ``FlowKitCluster/ClusterClient`` and raw ZeroMQ sockets.
///
/// Serialized: the machine has two cores, and each test runs four processes. Each test starts its
/// own cluster, so every seq in it is the test's own: a test can check the exact log head.
@Suite("Cluster processes", .serialized, .countingFailures, .timeLimit(.minutes(2)))
struct ClusterProcessTests {}

/// Seeded randomness, so a failing interleaving of choices can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
