import ArgumentParser
import FlowKitCluster
import FlowKitExamples
import FlowKitProcesses
import Synchronization

/// Runs the `flowkit` command with your own flows: the same subcommands, on your registry.
///
/// ```swift
/// @main enum Main {
///     static func main() async {
///         var registry = FlowRegistry()
///         registry.register(OrderFlow.self, as: "orders")
///         await FlowKitCLI.main(registry: registry)
///     }
/// }
/// ```
public enum FlowKitCLI {
    private static let current = Mutex<FlowRegistry?>(nil)

    /// Parses the process's arguments and runs the chosen subcommand with `registry`.
    public static func main(registry: FlowRegistry = FlowKitCLI.builtInRegistry) async {
        await main(registry: registry, command: FlowKitCommand.self)
    }

    /// Runs `command` (a root command with more subcommands) with `registry`.
    package static func main<Command: AsyncParsableCommand>(registry: FlowRegistry, command: Command.Type) async {
        current.withLock { $0 = registry }
        ChildProcess.dieWithParentIfAsked()
        await Command.main()
    }

    /// The registry the running command uses.
    package static var registry: FlowRegistry {
        current.withLock { $0 } ?? builtInRegistry
    }

    /// The example flows every `flowkit` binary ships: the articles' counter, timer, countdown, search,
    /// streaming and movie list, and a key-value flow.
    public static var builtInRegistry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self)
        registry.register(KeyValueFlow.self)
        registry.register(TimerFlow.self)
        registry.register(CountdownFlow.self)
        registry.register(SearchFlow.self)
        registry.register(StreamingFlow.self)
        registry.register(MovieListFlow.self)
        return registry
    }
}
