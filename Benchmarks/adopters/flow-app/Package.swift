// swift-tools-version: 6.1
import PackageDescription

// A user's first package on FlowKit, the flow library alone (README.md beside it).
let package = Package(
    name: "flow-app",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: "../../.."),
    ],
    targets: [
        .executableTarget(
            name: "FlowApp",
            dependencies: [.product(name: "FlowKit", package: "FlowKit")]
        ),
    ]
)
