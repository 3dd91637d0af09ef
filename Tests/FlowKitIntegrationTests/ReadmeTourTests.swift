#if canImport(Glibc)
import Glibc
#endif
import FlowKitProcesses
import Foundation
import Testing

/// Issue 6: the README's "A tour" works as written. Its commands are read from README.md itself
/// (the `sh` blocks of that section) and run, one by one, through `/bin/sh` with `flowkit` being
/// this build's binary, from a directory where `flowkit cluster --base-port 0` runs with its
/// default data directory (`.flowkit/cluster`), as `scripts/run` would.
extension ClusterProcessTests {
    /// A command of the tour and the comment after it.
    struct TourCommand: CustomStringConvertible {
        var command: String
        var comment: String
        var description: String { command }
    }

    /// The tour's `sh` blocks: the commands that must succeed, then the "bad input" ones.
    static func readmeTour() throws -> (tour: [TourCommand], badInput: [TourCommand]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "\n## A tour\n") else { throw HarnessError("README.md has no '## A tour' section") }
        let section = readme[start.upperBound...].components(separatedBy: "\n## ")[0]
        var blocks: [[TourCommand]] = []
        var current: [TourCommand]?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```sh") {
                current = []
            } else if line.hasPrefix("```"), let block = current {
                blocks.append(block)
                current = nil
            } else if current != nil, line.hasPrefix("flowkit ") {
                // The comment starts at the first " #" outside quotes.
                var quote: Character?
                var split = line.endIndex
                for index in line.indices {
                    let character = line[index]
                    if let open = quote {
                        if character == open { quote = nil }
                    } else if character == "'" || character == "\"" {
                        quote = character
                    } else if character == "#", index > line.startIndex, line[line.index(before: index)] == " " {
                        split = index
                        break
                    }
                }
                let command = line[..<split].trimmingCharacters(in: .whitespaces)
                let comment = split < line.endIndex ? line[line.index(after: split)...].trimmingCharacters(in: .whitespaces) : ""
                current!.append(TourCommand(command: command, comment: comment))
            }
        }
        guard blocks.count == 2 else { throw HarnessError("expected the tour's two sh blocks in README.md, found \(blocks.count)") }
        return (blocks[0], blocks[1])
    }

    /// The parts of `documented` (split at "…", which stands for what the README leaves out)
    /// that `text` does not contain in that order.
    static func missingFragments(of documented: String, in text: String) -> [String] {
        let fragments = documented.components(separatedBy: "…").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var rest = Substring(text)
        for (index, fragment) in fragments.enumerated() {
            guard let found = rest.range(of: fragment) else { return Array(fragments[index...]) }
            rest = rest[found.upperBound...]
        }
        return []
    }

    @Test func readmeTourRunsAsWritten() async throws {
        let (tour, badInput) = try Self.readmeTour()
        // The tour as this test knows it: if the README changes, the test reads the new one, but
        // it must still show these.
        for expected in ["flowkit emit ", "flowkit state ", "flowkit monitor --state ", "flowkit cancel ", "flowkit monitor --json", "flowkit status", "flowkit bench "] {
            #expect(tour.contains { $0.command.hasPrefix(expected) }, "the README's tour still has a `\(expected)…` command")
        }
        try #require(tour.count >= 9 && badInput.count == 2, "the tour: \(tour), bad input: \(badInput)")

        try await ClusterCommandProcess.run({ _ in ["--base-port", "0"] }, clusterDirectory: ".flowkit/cluster") { cluster in
            let binary = cluster.binary
            /// Runs one line of the README through sh, `flowkit` being this build's binary. The
            /// bench gets longer: in a debug build its raw ZeroMQ baseline alone takes about 20 s.
            func sh(_ line: String) async throws -> CommandResult {
                let script = "flowkit() { '\(binary)' \"$@\"; }\n" + line
                let timeout: Duration = line.contains("flowkit bench") ? .seconds(90) : .seconds(30)
                return try await cluster.runner.run("/bin/sh", ["-c", script], workingDirectory: cluster.directory, timeout: timeout)
            }
            for step in tour {
                let result = try await sh(step.command)
                print("tour: $ \(step.command)\n" + result.stdout.split(separator: "\n").prefix(5).map { "  " + $0.prefix(160) }.joined(separator: "\n"))
                #expect(result.exitCode == 0, "`\(step.command)` (\(step.comment)): \(result)")
            }
            for step in badInput {
                let result = try await sh(step.command)
                #expect(result.exitCode == 4, "`\(step.command)` exits 4 (refused): \(result)")
                let missing = Self.missingFragments(of: step.comment, in: result.stderr)
                #expect(missing.isEmpty, "`\(step.command)`: the error does not say \(missing) (README: \(step.comment)); it says: \(result.stderr)")
            }
            // Ctrl-C ends it cleanly.
            cluster.process.signalProcessOnly(SIGINT)
            let exited = await cluster.process.waitForExit(timeout: .seconds(15))
            #expect(exited && cluster.process.status == 0, "flowkit cluster on SIGINT: \(cluster.process.status.map(ChildProcess.describe) ?? "still running")")
        }
    }
}
