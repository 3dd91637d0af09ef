import ArgumentParser

/// The `flowkit` command of a user's own binary: the operator's subcommands.
public struct FlowKitCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flowkit",
        abstract: "Run FlowKit flows locally and across processes.",
        subcommands: operatorCommands,
        defaultSubcommand: ClusterCommand.self
    )

    /// What every `flowkit` binary can do: run a cluster or one of its processes, and talk to one.
    package static let operatorCommands: [any ParsableCommand.Type] = [
        ClusterCommand.self,
        DemoCommand.self,
        CoordinatorCommand.self,
        NodeCommand.self,
        EmitCommand.self,
        StateCommand.self,
        CancelCommand.self,
        FlowsCommand.self,
        StatusCommand.self,
        MonitorCommand.self,
        DashboardCommand.self,
        KeysCommand.self,
        ExportCommand.self,
        ReplayCheckCommand.self,
    ]

    public init() {}
}
