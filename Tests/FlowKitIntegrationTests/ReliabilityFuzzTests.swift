#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing

extension ReliabilityTests {
    /// The CI fuzz run: 10,000 malformed, random, truncated, oversize, wrong-version and mutated
    /// messages at every socket (node client from DEALER and REQ, coordinator submit, sync and
    /// publish) with a valid load alongside; then every limit and field edge, and 2,000 random
    /// submissions, at both walls, which must decide alike.
    @Test func fuzzingEverySocketCrashesNothingAndCountsEveryRefusal() async throws {
        let result = try await Reliability.flowkit(["fuzz", "--messages", "10000", "--wall-cases", "2000", "--json", "--quiet"], timeout: .seconds(600))
        #expect([0, 6].contains(result.status), "flowkit fuzz could not run:\n\(result.stderr.suffix(4_000))")
        let report = try ReliabilityReport.decode(result.stdout)
        for check in report.checks { #expect(check.held, "\(check.name): \(check.detail)") }
        let phases = report.phases ?? []
        #expect(Set(phases.map(\.target)) == ["node-client/dealer", "node-client/req", "coordinator-submit", "coordinator-sync", "coordinator-publish"])
        for phase in phases {
            #expect(phase.tally.sent == 10_000, "\(phase.target) sent \(phase.tally.sent)")
            #expect(phase.mismatches.isEmpty, "\(phase.target): \(phase.mismatches)")
        }
        let walls = try #require(report.walls)
        #expect(walls.disagreements.isEmpty, "\(walls.disagreements.prefix(10))")
        #expect(walls.cases >= 2_040 && walls.comparedAtBothWalls > 500 && walls.coordinatorOnly > 500, "\(walls)")
        #expect(walls.admitted > 0, "some submissions were admitted by both walls")
        for reason in ["oversize", "malformed", "unknown_flow", "undecodable_event", "unsupported_codec"] {
            #expect(walls.refusedByReason[reason, default: 0] > 0, "no submission was refused as \(reason) at both walls: \(walls.refusedByReason)")
        }
        // Sockets that answer refused most of what they got, each reason counted.
        for phase in phases where phase.target != "coordinator-publish" {
            let refused = phase.tally.errorReplies.values.reduce(0, +)
            #expect(refused > 7_000, "\(phase.target): only \(refused) of 10,000 refused")
            #expect(phase.rejectedDelta["bad_magic", default: 0] > 0 && phase.rejectedDelta["truncated", default: 0] > 0)
        }
    }

    /// libFuzzer for 25 s on each target of `Fuzz/` (`scripts/fuzz`): every wire decoder, and the
    /// ZMTP engine's session, greeting and command parsers. The script builds the Fuzz package from
    /// clean, in debug, with every module instrumented: a minute or two here. The run's coverage
    /// and speed are printed for the CI log.
    @Test(.enabled(if: Reliability.toolchainHasLibFuzzer, "the Swift toolchain has no libFuzzer runtime (libclang_rt.fuzzer)"), arguments: ["decoders", "zmtp"])
    func libFuzzerFindsNothing(in target: String) async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/fuzz").path
        let result = try await Reliability.run("/bin/bash", [script, target, "25"], timeout: .seconds(1_800))
        #expect(result.status == 0, "scripts/fuzz \(target) exited \(result.status):\n\(result.stdout.suffix(3_000))\n\(result.stderr.suffix(3_000))")
        #expect(result.stdout.contains("stat::number_of_executed_units"), "\(result.stdout.suffix(2_000))")
        let figures = result.stdout.split(separator: "\n").filter { $0.contains("DONE") || $0.hasPrefix("stat::number_of_executed_units") || $0.hasPrefix("stat::average_exec_per_sec") }
        print("libFuzzer, \(target), 25 s: \(figures.joined(separator: "; "))")
    }
}

extension Reliability {
    /// Whether the Swift toolchain that runs the tests ships libFuzzer's runtime.
    static var toolchainHasLibFuzzer: Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        guard let swift = path.split(separator: ":").map({ "\($0)/swift" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let real = realpath(swift, nil)
        else { return false }
        defer { free(real) }
        // <toolchain>/usr/bin/swift-driver → <toolchain>/usr/lib/clang/<version>/lib/linux/
        let clang = URL(fileURLWithPath: String(cString: real)).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("lib/clang").path
        guard let versions = try? FileManager.default.contentsOfDirectory(atPath: clang) else { return false }
        return versions.contains { FileManager.default.fileExists(atPath: "\(clang)/\($0)/lib/linux/libclang_rt.fuzzer-x86_64.a") }
    }
}
