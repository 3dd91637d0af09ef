import ArgumentParser
import FlowKitCluster

/// `flowkit cancel`: cancels effects of a flow instance, cluster-wide, through the order.
struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a flow instance's effects on every node.",
        discussion: """
            The cancel is a control entry in the order: every node cancels its own effects of that \
            instance whose cancel id reads as that text (an enum case's name, a string id), of \
            any type, when it applies it.
              flowkit cancel timer/kitchen --id timer
              flowkit cancel streaming/feed --all
            """
    )

    @Argument(help: "The instance: flowName/instanceKey.")
    var address: String

    @Option(help: "The cancel id, as text.")
    var id: String?

    @Flag(help: "Cancel every effect of the instance.")
    var all = false

    @OptionGroup var target: NodeTargetOptions

    func validate() throws {
        guard (id != nil) != all else { throw ValidationError("give either --id <cancel id> or --all") }
    }

    func run() async throws {
        let client = try await target.makeClient()
        do {
            let ordered = try await client.cancel(at: address, id: all ? nil : id, wait: .applied)
            await client.close()
            if target.json {
                printFlushed(jsonLine(ordered))
            } else {
                printFlushed("cancel of \(all ? "every effect" : "'\(id!)'") at \(address) ordered at seq \(ordered.seq)")
            }
        } catch {
            await client.close()
            throw fail(error)
        }
    }
}
