import ArgumentParser
import FlowKitCommands
import Foundation
import Logging

/// `flowkit fuzz`: malformed, random, truncated, oversize and mutated messages at every socket of
/// a cluster under a valid load.
struct FuzzCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fuzz",
        abstract: "Send malformed and mutated messages to every socket of a cluster under load, and check it survives and counts them.",
        discussion: """
            Starts a coordinator and 3 nodes in a fresh directory, with a valid load of ledger records \
            running throughout, then sends --messages messages to each socket in turn:

              node-client/dealer   node-1's client ROUTER, from a DEALER, many in flight
              node-client/req      node-2's client ROUTER, from 16 REQ sockets
              coordinator-submit   the coordinator's submit ROUTER (DEALER, as a node)
              coordinator-sync     the coordinator's sync ROUTER (DEALER)
              coordinator-publish  the coordinator's publish XPUB, from an XSUB sending subscription
                                   frames and garbage

            Messages are random bytes, random bodies after a valid header, truncated, with a bad magic, \
            a wrong version or type, a wrong frame count, bit flips, extreme field values, spliced \
            halves, oversize (1 MiB + 4 KiB) and unmodified valid ones, all from the socket's valid \
            messages and --seed.

            Then the same submissions go to both walls, node-1's client socket (as EMIT or CANCEL) and \
            the coordinator's submit socket (as SUBMIT from a node that skipped its own check): every \
            size limit at, below and above its edge (the largest event, a SUBMIT frame 16 bytes under \
            the 64 MiB frame limit, the longest cancel id), every constrained field at its edges (flow \
            name and key lengths, control characters, bad UTF-8, codecs, kinds, origin 0, submission \
            0, trailing bytes), then --wall-cases random combinations. Both must admit alike or \
            refuse with the same reason; what only a SUBMIT can carry must be refused.

            Then a child process subscribes to 4 topics of --long-subscription-mib / 4 MiB each on the \
            publish socket and leaves, and the coordinator's RSS is read before and after.

            Checks: no process crashes; every ERROR received matches the receiver's \
            flowkit_rejected_total{reason} (scraped from /metrics before and after each socket); every \
            answer is a FlowKit message; both walls decide alike; no process's RSS rises more than --rss-growth-limit above its \
            level before the fuzzing, nor because of the long subscriptions; valid emits are acknowledged while every socket is fuzzed; at the \
            end the nodes converge with equal digests and every acknowledged id is once on every node.

            Exit codes: 0 every check held; 6 one failed (logs kept); 1 the run could not be set up.

              flowkit fuzz --messages 10000
              flowkit fuzz --messages 100000 --json > fuzz.json
            """
    )

    @Option(help: "Messages per socket.")
    var messages = 100_000

    @Option(help: "Sockets to fuzz, comma-separated, or 'all'.")
    var targets = "all"

    @Option(help: "Seed for every random choice: the same seed sends the same messages.")
    var seed: UInt64 = 1

    @Option(help: "Valid ledger emits per second alongside.")
    var rate: Double = 200

    @Option(help: "MiB any process's RSS may rise above its level before the fuzzing.")
    var rssGrowthLimit = 256

    @Option(help: "Random submissions sent to both walls (a node and the coordinator), after every limit and field edge once.")
    var wallCases = 1_000

    @Option(help: "MiB of subscription topics (in 4 topics) a child process subscribes on the publish socket, to measure what long subscriptions cost the coordinator; 0 skips it.")
    var longSubscriptionMib = 16

    @Option(help: .hidden)
    var subscribeChild: String?

    @Option(help: .hidden)
    var subscribeTopics = 4

    @Option(help: .hidden)
    var subscribeBytes = 1 << 20

    @Option(help: "Keep the cluster's data and logs here (default: a temporary directory, removed when every check held).")
    var dir: String?

    @Flag(help: "Print the report as JSON on standard output (the tables go to standard error).")
    var json = false

    @Flag(help: "No progress lines.")
    var quiet = false

    func validate() throws {
        guard messages >= 1 else { throw ValidationError("--messages must be at least 1") }
        guard rate > 0, rssGrowthLimit > 0 else { throw ValidationError("--rate and --rss-growth-limit must be positive") }
        guard wallCases >= 0 else { throw ValidationError("--wall-cases must not be negative") }
        do {
            _ = try FuzzTarget.parseList(targets)
        } catch let error as ChaosError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        if let subscribeChild {
            LongSubscriptionProbe.child(endpoint: subscribeChild, topics: subscribeTopics, bytes: subscribeBytes)
        }
        var logger = Logger(label: "flowkit.fuzz")
        logger.logLevel = .warning
        var configuration = FuzzConfiguration()
        configuration.messages = messages
        configuration.targets = try FuzzTarget.parseList(targets)
        configuration.seed = seed
        configuration.rate = rate
        configuration.growthLimitBytes = rssGrowthLimit << 20
        configuration.longSubscriptionBytes = longSubscriptionMib << 20
        configuration.wallCases = wallCases
        configuration.directory = dir
        configuration.quiet = quiet
        let stop = StopFlag()
        let session = FuzzSession(configuration: configuration, logger: logger, stop: stop)
        try await runCheckedSession(json: json, stop: stop, logger: logger) { try await session.run() }
    }
}
