import ArgumentParser
import FlowKitCluster
import Foundation

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
                let object: JSONValue = [
                    "address": .string(address), "applied": .integer(Int64(state.applied)), "lastSeq": .integer(Int64(state.lastSeq)),
                    "digest": .string("\(state.digest)"), "state": (try? JSONValue(parsing: state.json)) ?? .null,
                ]
                printFlushed(object.text())
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
