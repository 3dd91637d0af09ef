// swift-tools-version: 6.1
import PackageDescription

// A user's first package on FlowKit's cluster (README.md beside it).
let package = Package(
    name: "cluster-app",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: "../../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
    ],
    targets: [
        .executableTarget(
            name: "ClusterApp",
            dependencies: [
                .product(name: "FlowKit", package: "FlowKit"),
                .product(name: "FlowKitCluster", package: "FlowKit"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
