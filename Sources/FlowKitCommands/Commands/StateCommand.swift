import ArgumentParser
import FlowKitCluster

/// `flowkit state`: reads a flow instance's state from a node.
struct StateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Show a flow instance's state on a node.",
        discussion: "With --min-seq the node answers once it has applied that seq: read your writes from any node."
    )

    @Argument(help: "The instance: flowName/instanceKey.")
    var address: String

    @Option(help: "Wait until the node has applied at least this seq.")
    var minSeq: UInt64 = 0

    @OptionGroup var target: NodeTargetOptions

    func run() async throws {
        let client = try await target.makeClient()
        do {
            let state = try await client.query(address, minApplied: minSeq)
            await client.close()
            if target.json {
                printFlushed(
                    #"{"address":"\#(address)","applied":\#(state.applied),"lastSeq":\#(state.lastSeq),"digest":"\#(state.digest)","state":\#(String(decoding: state.json, as: UTF8.self))}"#
                )
            } else {
                printFlushed("\(address) after seq \(state.lastSeq) (node applied \(state.applied)), digest \(state.digest)")
                printFlushed(prettyJSON(state.json))
            }
        } catch {
            await client.close()
            throw fail(error)
        }
    }
}
