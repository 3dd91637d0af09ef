import ArgumentParser

/// The `flowkit` command: the root of every subcommand.
public struct FlowKitCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flowkit",
        abstract: "Run FlowKit flows locally and across processes.",
        subcommands: [
            ClusterCommand.self,
            DemoCommand.self,
            CoordinatorCommand.self,
            NodeCommand.self,
            EmitCommand.self,
            StateCommand.self,
            CancelCommand.self,
            StatusCommand.self,
            MonitorCommand.self,
            KeysCommand.self,
            ChaosCommand.self,
            FuzzCommand.self,
            BenchCommand.self,
            BenchPeerCommand.self,
        ],
        defaultSubcommand: ClusterCommand.self
    )

    public init() {}
}
