// swift-tools-version: 6.1
import PackageDescription

/// One set of settings for every target: Swift 6 language mode (the tools-version default),
/// complete concurrency checking, and the upcoming features the codebase is written for.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// Built and tested on Linux only: the cluster reads /proc, and libzmq comes from the system.
let package = Package(
    name: "FlowKit",
    products: [
        // The library: flows, their test store, the transport, the durable log, the cluster, and
        // the entry point of a user's own `flowkit`-style binary (`FlowKitCLI.main(registry:)`).
        // FlowKit is FlowKitCore plus CasePaths' `@CasePathable` macro; FlowKitCore builds without
        // swift-syntax (the macro's compiler), and so do the cluster and the commands.
        .library(name: "FlowKit", targets: ["FlowKit"]),
        .library(name: "FlowKitCore", targets: ["FlowKitCore"]),
        .library(name: "FlowKitTesting", targets: ["FlowKitTesting"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        .library(name: "FlowKitLog", targets: ["FlowKitLog"]),
        .library(name: "FlowKitCluster", targets: ["FlowKitCluster"]),
        .library(name: "FlowKitCommands", targets: ["FlowKitCommands"]),
        // The stock command: FlowKitCommands plus the load, chaos and fuzz tools.
        .executable(name: "flowkit", targets: ["flowkit"]),
        // Not API (hence the underscore): the tools, the flows they drive and the examples, for the
        // sibling Benchmarks/ and Fuzz/ packages, which SwiftPM lets see products only. The fuzz
        // target needs the flows alone, without the commands' web server and argument parser.
        .library(name: "_FlowKitTools", targets: ["FlowKitTools", "FlowKitExamples"]),
        .library(name: "_FlowKitExamples", targets: ["FlowKitExamples"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        // The dashboard serves HTTP/1.1 and a WebSocket on SwiftNIO.
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // The election's etcd client: HTTP/1.1 to etcd's JSON gateway on pooled connections, TLS
        // through swift-nio-ssl (whose TLSConfiguration the client takes).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.30.0"),
        .package(url: "https://github.com/pointfreeco/swift-case-paths", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.4.0"),
        .package(url: "https://github.com/pointfreeco/swift-custom-dump", from: "1.3.0"),
        // Without the CombineSchedulers trait (`mainQueue`, and OpenCombine under it on Linux): flows
        // take clocks. A package that wants it enables it on its own swift-dependencies line.
        .package(url: "https://github.com/pointfreeco/swift-dependencies", from: "1.4.0", traits: ["Clocks", "Foundation", "FoundationNetworking"]),
        .package(url: "https://github.com/pointfreeco/xctest-dynamic-overlay", from: "1.4.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        // MARK: The flow library

        .target(
            name: "FlowKitCore",
            dependencies: [
                .product(name: "CasePathsCore", package: "swift-case-paths"),
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // What users import: FlowKitCore and CasePaths with its macro (Sources/FlowKit/FlowKit.swift).
        .target(
            name: "FlowKit",
            dependencies: [
                "FlowKitCore",
                .product(name: "CasePaths", package: "swift-case-paths"),
            ],
            swiftSettings: swiftSettings
        ),
        // The flows the articles, the stock command and the tools run.
        .target(
            name: "FlowKitExamples",
            dependencies: [
                "FlowKitCore",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FlowKitTesting",
            dependencies: [
                "FlowKitCore",
                .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
                .product(name: "CustomDump", package: "swift-custom-dump"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "IssueReporting", package: "xctest-dynamic-overlay"),
                // Routes the test store's failures to Swift Testing and XCTest, so users of
                // FlowKitTesting need not add it themselves.
                .product(name: "IssueReportingTestSupport", package: "xctest-dynamic-overlay"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: The ZeroMQ transport

        .systemLibrary(
            name: "CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .target(
            name: "ZeroMQ",
            dependencies: [
                "CZeroMQ",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: The durable log

        .target(
            name: "FlowKitLog",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: The replicated cluster

        .target(
            name: "FlowKitCluster",
            dependencies: [
                "FlowKitCore",
                "FlowKitLog",
                "ZeroMQ",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                // The etcd client.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // Node and Coordinator are Services: a user's own ServiceGroup runs them.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: The command-line front end

        // The flowkit binaries run on jemalloc: glibc's malloc serialises on its arena locks when
        // one thread frees what another allocated, the pattern of every effect task and queue hop
        // (README, "Performance": 2x the effect start + cancel rate). The library itself leaves the
        // allocator to its user.
        .target(
            name: "CFlowKitSupport",
            linkerSettings: [.linkedLibrary("jemalloc", .when(platforms: [.linux]))]
        ),
        // Starting and supervising child processes: the one launcher `flowkit cluster`, the tools
        // and the tests share.
        .target(
            name: "FlowKitProcesses",
            swiftSettings: swiftSettings
        ),
        // The operator's commands (cluster, coordinator, node, emit, state, status, monitor, …)
        // and `FlowKitCLI.main(registry:)`, the entry point of a user's own binary.
        .target(
            name: "FlowKitCommands",
            dependencies: [
                "CFlowKitSupport",
                "FlowKitCore",
                "FlowKitCluster",
                "FlowKitExamples",
                "FlowKitProcesses",
                "ZeroMQ",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The dashboard's page, embedded in the binary (Dashboard/DashboardPage.swift).
            resources: ["dashboard.html", "dashboard.css", "model.js", "views.js", "controls.js"].map { .embedInCode("Dashboard/Page/" + $0) },
            swiftSettings: swiftSettings
        ),
        // The load tool (bench), chaos and fuzz, and the flows they drive: linked only by the
        // executables and the tests, never shipped in a library product.
        .target(
            name: "FlowKitTools",
            dependencies: [
                "FlowKitCore",
                "FlowKitCluster",
                "FlowKitCommands",
                "FlowKitExamples",
                "FlowKitProcesses",
                "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "flowkit",
            dependencies: ["FlowKitTools"],
            swiftSettings: swiftSettings
        ),

        // The flowkit command with test-only flows, built the way a user's own binary is.
        .executableTarget(
            name: "flowkit-testbed",
            dependencies: ["FlowKit", "FlowKitCluster", "FlowKitTools"],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests

        .testTarget(
            name: "FlowKitTests",
            dependencies: [
                "FlowKit",
                "FlowKitCore",
                "FlowKitExamples",
                "FlowKitTesting",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FlowKitClusterTests",
            dependencies: [
                "FlowKit",
                "FlowKitCluster",
                "FlowKitExamples",
                "FlowKitTools",
                .product(name: "Logging", package: "swift-log"),
                // The etcd client's TLS setting.
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ZeroMQTests",
            dependencies: [
                "ZeroMQ",
                "CZeroMQ",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FlowKitLogTests",
            dependencies: [
                "FlowKitCluster",
                "FlowKitLog",
                "FlowKitProcesses",
                "FlowKitTools",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FlowKitIntegrationTests",
            dependencies: [
                "FlowKit",
                "FlowKitCluster",
                "FlowKitCommands",
                "FlowKitExamples",
                "FlowKitLog",
                "FlowKitProcesses",
                "FlowKitTools",
                "ZeroMQ",
                .product(name: "Logging", package: "swift-log"),
                // The dashboard's WebSocket and Chromium's DevTools, read with SwiftNIO's codec
                // (Harness/TestWebSocket.swift).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Every code sample of FlowKit.docc's articles, as they write it, with tests of its behaviour.
        .testTarget(
            name: "ArticleSampleTests",
            dependencies: [
                "FlowKit",
                "FlowKitTesting",
                .product(name: "Clocks", package: "swift-clocks"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FlowKitTestingTests",
            dependencies: [
                "FlowKit",
                "FlowKitTesting",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
