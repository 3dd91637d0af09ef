// swift-tools-version: 6.1
import PackageDescription

/// libFuzzer targets, in their own package so the main build never needs the sanitizer runtime:
///
/// * `FuzzDecoders`: every FlowKit wire decoder a process runs on bytes from the network;
/// * `FuzzZMTP`: FlowKit's ZMTP engine, which reads every byte a peer sends before anything else
///   (the greeting, the handshake, commands, frames of every length).
///
/// Build and run one with `scripts/fuzz <decoders|zmtp> <seconds>`, which also instruments the
/// dependencies (AddressSanitizer and libFuzzer's coverage) so coverage inside them guides it;
/// libFuzzer itself is linked here only.
let fuzzerFlags: [SwiftSetting] = [
    // The entry point hands over to libFuzzer's driver (`<target>_main`, FuzzDriver).
    .unsafeFlags(["-parse-as-library", "-sanitize=fuzzer,address"]),
]

let package = Package(
    name: "FlowKitFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "FlowKit", path: ".."),
    ],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzDecoders",
            dependencies: [
                "FuzzDriver",
                .product(name: "FlowKitCluster", package: "FlowKit"),
                .product(name: "_FlowKitExamples", package: "FlowKit"),
            ],
            swiftSettings: fuzzerFlags,
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        ),
        .executableTarget(
            name: "FuzzZMTP",
            dependencies: [
                "FuzzDriver",
                .product(name: "ZeroMQ", package: "FlowKit"),
            ],
            swiftSettings: fuzzerFlags,
            linkerSettings: [.unsafeFlags(["-sanitize=fuzzer,address"])]
        ),
    ]
)
