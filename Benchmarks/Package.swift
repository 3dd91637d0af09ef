// swift-tools-version: 6.1
import PackageDescription

/// FlowKit's benchmarks, in their own package so that users of the library never pull the benchmark
/// dependency. Run from this directory:
///
///     swift package benchmark                       # every suite
///     swift package benchmark --target FlowStoreBenchmarks
///     swift run -c release log-perf                 # the coordinator's log
///     swift run -c release flow-perf                # effect start + cancel, for profilers
let package = Package(
    name: "FlowKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        // For digest-perf's comparison only: FlowKit's own SHA-256 against BoringSSL's.
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // The raw libzmq baseline: the transport measurements in plain C (Benchmarks/zmq-compare.sh).
        .executableTarget(
            name: "zmq-c-baseline",
            path: "ZeroMQ/zmq-c-baseline",
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("zmq")]
        ),
        // The same measurements through the Swift ZeroMQ module (sync and async paths).
        .executableTarget(
            name: "zmq-perf",
            dependencies: [
                .product(name: "ZeroMQ", package: "FlowKit"),
            ],
            path: "ZeroMQ/zmq-perf"
        ),
        // The coordinator's durable ordering rate, log replay and snapshot join: `swift run -c release cluster-perf`.
        .executableTarget(
            name: "cluster-perf",
            dependencies: [
                .product(name: "FlowKitCore", package: "FlowKit"),
                .product(name: "FlowKitCluster", package: "FlowKit"),
                .product(name: "_FlowKitTools", package: "FlowKit"),
                .product(name: "ZeroMQ", package: "FlowKit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "ClusterPerf",
            // On jemalloc, as the coordinator and nodes run.
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // The FlowStore's effect start + cancel in a plain loop, for profilers and for comparing
        // allocators (it links none: LD_PRELOAD one): `swift run -c release flow-perf`.
        .executableTarget(
            name: "flow-perf",
            dependencies: [
                .product(name: "FlowKitCore", package: "FlowKit"),
            ],
            path: "FlowPerf"
        ),
        // A state digest's cost, and FlowKit's SHA-256 against swift-crypto's: `swift run -c release digest-perf`.
        .executableTarget(
            name: "digest-perf",
            dependencies: [
                .product(name: "FlowKitCore", package: "FlowKit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "DigestPerf"
        ),
        // Throughput and commit latency of the coordinator's log: `swift run -c release log-perf [dir]`.
        .executableTarget(
            name: "log-perf",
            dependencies: [
                .product(name: "FlowKitLog", package: "FlowKit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "LogPerf"
        ),
        .executableTarget(
            name: "ClusterBenchmarks",
            dependencies: [
                .product(name: "FlowKitCluster", package: "FlowKit"),
                .product(name: "_FlowKitTools", package: "FlowKit"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "ClusterBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "TransportBenchmarks",
            dependencies: [
                .product(name: "ZeroMQ", package: "FlowKit"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "TransportBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "FlowStoreBenchmarks",
            dependencies: [
                .product(name: "FlowKitCore", package: "FlowKit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "FlowStoreBenchmarks",
            // On the system malloc: the harness's malloc counter and jemalloc do not mix (the run
            // crashes). flow-perf compares the two allocators on the effect path.
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
