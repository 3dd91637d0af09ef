import Foundation

/// Type-checks small programs against the modules this test run was built with: how a test
/// proves what a user's own code can and cannot write.
enum TypeCheck {
    /// Runs `swiftc -typecheck` on `source`, against the modules of this build.
    static func run(_ source: String) throws -> (status: Int32, output: String) {
        // The test bundle lives in the build directory (…/debug/FlowKitPackageTests.xctest), beside
        // the `Modules` directory; C modules need their module maps.
        let buildDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .pathComponents.prefix { !$0.hasSuffix(".xctest") }.joined(separator: "/").replacingOccurrences(of: "//", with: "/")
        let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        var arguments = ["-typecheck", "-I", "\(buildDirectory)/Modules"]
        for moduleMap in moduleMaps(buildDirectory: buildDirectory, packageDirectory: packageDirectory) {
            arguments += ["-Xcc", "-fmodule-map-file=\(moduleMap)"]
        }
        let sourceFile = FileManager.default.temporaryDirectory.appendingPathComponent("typecheck-\(UUID().uuidString).swift")
        try source.write(to: sourceFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: sourceFile) }
        arguments.append(sourceFile.path)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// The module maps of the C modules the flow modules import: those SwiftPM generated for C
    /// targets (in `<target>.build/`), those dependencies ship (`Sources/<module>/include/`, e.g.
    /// swift-atomics' shims under SwiftNIO), and CZeroMQ's own.
    static func moduleMaps(buildDirectory: String, packageDirectory: String) -> [String] {
        let files = FileManager.default
        let targets = (try? files.contentsOfDirectory(atPath: buildDirectory)) ?? []
        let generated = targets.filter { $0.hasSuffix(".build") }
            .map { "\(buildDirectory)/\($0)/module.modulemap" }
            .filter { files.fileExists(atPath: $0) }
        // The build directory is <scratch>/<triple>/debug; dependencies are in <scratch>/checkouts.
        let checkouts = URL(fileURLWithPath: buildDirectory).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("checkouts").path
        var shipped: [String] = []
        for package in (try? files.contentsOfDirectory(atPath: checkouts)) ?? [] {
            for module in (try? files.contentsOfDirectory(atPath: "\(checkouts)/\(package)/Sources")) ?? [] {
                let map = "\(checkouts)/\(package)/Sources/\(module)/include/module.modulemap"
                // Only modules this build compiled, and not twice.
                if targets.contains("\(module).build"), !generated.contains("\(buildDirectory)/\(module).build/module.modulemap"), files.fileExists(atPath: map) {
                    shipped.append(map)
                }
            }
        }
        return generated + shipped + ["\(packageDirectory)/Sources/CZeroMQ/module.modulemap"]
    }
}
