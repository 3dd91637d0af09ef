import ArgumentParser
import FlowKitCluster

/// `flowkit emit`: sends an event to a flow instance through a node.
struct EmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emit",
        abstract: "Emit an event to a flow instance.",
        discussion: """
            The event is JSON in the flow's Codable form, for example:
              flowkit emit counter/room-1 '{"increment":{}}'
              flowkit emit counter/room-1 '{"add":{"_0":5}}'
              flowkit emit kv/config '{"set":{"key":"mode","value":"fast"}}'
            Prints the seq the cluster ordered it at.
            """
    )

    @Argument(help: "The instance: flowName/instanceKey.")
    var address: String

    @Argument(help: "The event, as JSON.")
    var event: String

    @Option(help: "Answer once 'ordered' (the default) or once also 'applied' by the node.")
    var wait: String = "ordered"

    @OptionGroup var target: NodeTargetOptions

    func run() async throws {
        guard let mode = ["ordered": WaitMode.ordered, "applied": .applied][wait] else {
            throw ValidationError("--wait must be ordered or applied; got \(wait)")
        }
        let client = try await target.makeClient()
        do {
            let ordered = try await client.emit(json: event, to: address, wait: mode)
            await client.close()
            if target.json {
                printFlushed(jsonLine(ordered))
            } else {
                printFlushed("ordered \(address) at seq \(ordered.seq) (epoch \(ordered.epoch))\(ordered.applied ? ", applied" : "")")
            }
        } catch {
            await client.close()
            throw fail(error)
        }
    }
}
