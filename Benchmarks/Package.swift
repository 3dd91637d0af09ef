// swift-tools-version: 6.1
import PackageDescription

/// FlowKit's benchmarks, in their own package so that users of the library never pull the benchmark
/// dependency. Run from this directory:
///
///     swift package benchmark                       # every suite
///     swift package benchmark --target FlowStoreBenchmarks
let package = Package(
    name: "FlowKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "FlowStoreBenchmarks",
            dependencies: [
                .product(name: "FlowKit", package: "FlowKit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "FlowStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
