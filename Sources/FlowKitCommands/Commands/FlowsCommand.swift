import ArgumentParser
import FlowKitCluster
import Foundation

/// `flowkit flows`: the flows this binary runs, their events and the state of a new instance.
struct FlowsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flows",
        abstract: "List the flows this binary runs: each one's events, as JSON to emit, and the state of a new instance.",
        discussion: """
            Every process of a cluster runs the same flows. An event is a JSON object with one key, its case \\
            name; what an instance holds is its state, as 'flowkit state' shows it:
              flowkit flows
              flowkit emit counter/a '{"add":{"_0":5}}'
              flowkit flows --json | jq '.[].name'
            """
    )

    @Flag(help: "Print the list as JSON: [{name, eventType, stateType, codec, version, events, initialState}].")
    var json = false

    func run() async throws {
        let flows = FlowKitCLI.registry.descriptions
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            printFlushed(String(decoding: try encoder.encode(flows), as: UTF8.self))
            return
        }
        for flow in flows {
            printFlushed("\(flow.name)  (\(flow.eventType), \(flow.codec), version \(flow.version))")
            printFlushed("  events:  " + (flow.events.isEmpty ? "(no samples listed)" : flow.events.joined(separator: "  ")))
            printFlushed("  state:   " + flow.initialState)
        }
    }
}
