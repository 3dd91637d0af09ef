// swift-tools-version: 6.1
import PackageDescription

/// libFuzzer targets for FlowKit's wire decoders, in their own package so the main build never
/// needs the sanitizer runtime. Build and run with `scripts/fuzz-decoders.sh <seconds>`, which also
/// instruments the dependencies (AddressSanitizer and libFuzzer's coverage) so coverage inside
/// FlowKitCluster guides it; libFuzzer itself is linked here only.
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
                .product(name: "_FlowKitExamples", package: "FlowKit"),
            ],
            swiftSettings: [
                // The entry point hands over to libFuzzer's driver (FuzzDecoders_main in Decoders.swift).
                .unsafeFlags(["-parse-as-library", "-sanitize=fuzzer,address"]),
            ],
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        ),
    ]
)
