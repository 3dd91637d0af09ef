import ArgumentParser
import FlowKitCluster
import FlowKitCommands
import FlowKitExamples

/// The stock `flowkit` command: every operator's subcommand, and the load, chaos and fuzz tools.
struct FlowKitToolsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowkit",
        abstract: "Run FlowKit flows locally and across processes; load-test, fault and fuzz a cluster.",
        subcommands: FlowKitCommand.operatorCommands + [
            ChaosCommand.self,
            FuzzCommand.self,
            BenchCommand.self,
            BenchPeerCommand.self,
            SimulateCommand.self,
        ],
        defaultSubcommand: FlowKitCommand.configuration.defaultSubcommand
    )
}

/// The stock `flowkit` binary's entry point.
package enum FlowKitTools {
    /// Runs the stock command with `registry`.
    package static func main(registry: FlowRegistry = FlowKitTools.registry) async {
        await FlowKitCLI.main(registry: registry, command: FlowKitToolsCommand.self)
    }

    /// The built-in example flows, and the flows the tools drive: the load tool's flow and the
    /// chaos suite's audit ledger.
    package static var registry: FlowRegistry {
        var registry = FlowKitCLI.builtInRegistry
        registry.register(LedgerFlow.self)
        registry.register(LoadFlow.self, codec: .binary)
        return registry
    }
}
