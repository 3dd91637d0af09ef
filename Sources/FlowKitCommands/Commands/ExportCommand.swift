import ArgumentParser
import FlowKitCluster
import Foundation

/// `flowkit export`: records a stretch of a running cluster's log as a replay sample.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Record a stretch of the cluster's log as a sample for the replay check.",
        discussion: """
            Follows the log through the coordinator (whose endpoints the node's STATUS names) and \
            writes --count entries from --from (or from the coordinator's snapshot, where the log \
            was compacted past it), up to the head as the export began, with the states of the \
            instances they touch before and after them. Run it with the build the cluster runs: \
            it replays the stretch with its own flows to record the states after it. Then run \
            `replay-check` on the sample with the next build (docs/VERSIONING.md).

              flowkit export --count 100000 --out sample.json
              my-app replay-check sample.json
            """
    )

    @Option(help: "The first seq to record.")
    var from: UInt64 = 1

    @Option(help: "The most entries to record.")
    var count: UInt64 = 100_000

    @Option(help: "Where to write the sample.")
    var out: String

    @Option(help: "Give up after this many seconds.")
    var giveUpAfter: Int = 120

    @OptionGroup var target: NodeTargetOptions

    func run() async throws {
        let client = try await target.makeClient()
        let sample: ReplaySample
        do {
            sample = try await client.exportSample(registry: FlowKitCLI.registry, from: from, count: count, timeout: .seconds(giveUpAfter))
            await client.close()
        } catch {
            await client.close()
            throw fail(error)
        }
        try sample.encoded().write(to: URL(fileURLWithPath: out))
        printFlushed(
            "wrote \(out): entries \(sample.from) to \(sample.through) (\(sample.entries.count)), \(sample.end.count) instances"
        )
    }
}

/// `replay-check`: replays a sample through this binary's flows.
struct ReplayCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-check",
        abstract: "Replay a sample of a cluster's log through this build's flows; fail on what no longer reads or ends elsewhere.",
        discussion: """
            Restores the sample's states through the flows' state steps, reads every entry through \
            their event steps, applies them with the reducers, and compares each instance's state \
            with the one the cluster's build left. Exits 0 when everything reads and matches, 6 \
            otherwise, naming every entry that no longer decodes (seq, address, version, why) and \
            every instance that ends in another state (both states). docs/VERSIONING.md.

              my-app replay-check sample.json
            """
    )

    @Argument(help: "A sample `export` wrote.")
    var sample: String

    func run() async throws {
        let loaded: ReplaySample
        do {
            loaded = try ReplaySample(contentsOf: URL(fileURLWithPath: sample))
        } catch {
            throw fail(error)
        }
        let report = ReplayCheck(registry: FlowKitCLI.registry).run(loaded)
        printFlushed(report.description)
        if !report.passed { throw ExitCode(ExitCodes.checkFailed) }
    }
}
