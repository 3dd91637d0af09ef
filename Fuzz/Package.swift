// swift-tools-version: 6.1
import PackageDescription

/// libFuzzer targets for FlowKit's wire decoders, in their own package so the main build never
/// needs the sanitizer runtime. Build and run with `scripts/fuzz-decoders.sh <seconds>`, which also
/// instruments the dependencies (`--sanitize=fuzzer`) so coverage inside FlowKitCluster guides it.
let package = Package(
    name: "FlowKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: ".."),
    ],
    targets: [
        .executableTarget(
            name: "FuzzDecoders",
            dependencies: [
                .product(name: "FlowKitCluster", package: "FlowKit"),
                .product(name: "FlowKitExamples", package: "FlowKit"),
            ],
            swiftSettings: [
                // libFuzzer brings `main`; this target only defines LLVMFuzzerTestOneInput.
                .unsafeFlags(["-parse-as-library", "-sanitize=fuzzer,address"]),
            ],
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        ),
    ]
)
