import Foundation
import Testing

/// A hand-written actor flow cannot be registered for replication: the compiler refuses it, with a
/// message that says why and what to write instead. Checked by type-checking small programs
/// against the modules this test run was built with.
@Suite struct ActorFlowRefusalTests {
    static let actorFlow = """
        import FlowKit
        import FlowKitCluster

        actor HandWritten: StatefulFlowProviding {
            var state = 0
            var stateSubscribers: [((Int) -> Void)] = []
            func emit(_ event: Int) async { state = event }
        }

        var registry = FlowRegistry()
        registry.register(HandWritten.self, as: "hand")
        """

    /// The same program with a `Flow`: what the message tells the user to write. It must compile,
    /// or the refusal above could be any error.
    static let reducerFlow = """
        import FlowKit
        import FlowKitCluster

        struct Written: Flow, ReplicatedFlow {
            struct State: Codable, Hashable, Sendable { var value = 0 }
            enum Event: Codable, Sendable { case set(Int) }
            static var initialState: State { State() }
            func reduce(into state: inout State, event: Event) -> Effect<Event> {
                switch event { case .set(let value): state.value = value }
                return .none
            }
        }

        var registry = FlowRegistry()
        registry.register(Written.self)
        """

    @Test func registeringAnActorFlowIsACompileErrorThatExplainsItself() throws {
        let refused = try Self.typecheck(Self.actorFlow)
        #expect(refused.status != 0)
        #expect(refused.output.contains("is unavailable: an actor flow cannot be replicated"), "\(refused.output)")
        #expect(refused.output.contains("Write it as a Flow"))

        let accepted = try Self.typecheck(Self.reducerFlow)
        #expect(accepted.status == 0, "\(accepted.output)")
    }

    /// Runs `swiftc -typecheck` on `source`, against the modules of this build.
    static func typecheck(_ source: String) throws -> (status: Int32, output: String) {
        // The test bundle lives in the build directory (…/debug/FlowKitPackageTests.xctest), beside
        // the `Modules` directory; C modules need their module maps.
        let buildDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .pathComponents.prefix { !$0.hasSuffix(".xctest") }.joined(separator: "/").replacingOccurrences(of: "//", with: "/")
        let packageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        var arguments = ["-typecheck", "-I", "\(buildDirectory)/Modules"]
        for moduleMap in moduleMaps(buildDirectory: buildDirectory, packageDirectory: packageDirectory) {
            arguments += ["-Xcc", "-fmodule-map-file=\(moduleMap)"]
        }
        let sourceFile = FileManager.default.temporaryDirectory.appendingPathComponent("actor-flow-\(UUID().uuidString).swift")
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
    /// targets (in `<target>.build/`), and CZeroMQ's own.
    static func moduleMaps(buildDirectory: String, packageDirectory: String) -> [String] {
        let generated = ((try? FileManager.default.contentsOfDirectory(atPath: buildDirectory)) ?? [])
            .filter { $0.hasSuffix(".build") }
            .map { "\(buildDirectory)/\($0)/module.modulemap" }
            .filter { FileManager.default.fileExists(atPath: $0) }
        return generated + ["\(packageDirectory)/Sources/CZeroMQ/module.modulemap"]
    }
}
