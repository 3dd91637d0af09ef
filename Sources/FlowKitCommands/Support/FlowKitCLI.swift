import ArgumentParser
import FlowKitCluster
import FlowKitExamples
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
        current.withLock { $0 = registry }
        ChildProcess.dieWithParentIfAsked()
        await FlowKitCommand.main()
    }

    /// The registry the running command uses.
    static var registry: FlowRegistry {
        current.withLock { $0 } ?? builtInRegistry
    }

    /// The example flows every `flowkit` binary ships: the articles' counter, timer, countdown, search,
    /// streaming and movie list, a key-value flow, an audit ledger, and the load tool's flow.
    public static var builtInRegistry: FlowRegistry {
        var registry = FlowRegistry()
        registry.register(CounterFlow.self)
        registry.register(KeyValueFlow.self)
        registry.register(TimerFlow.self)
        registry.register(CountdownFlow.self)
        registry.register(SearchFlow.self)
        registry.register(StreamingFlow.self)
        registry.register(MovieListFlow.self)
        registry.register(LedgerFlow.self)
        registry.register(LoadFlow.self, codec: .binary)
        return registry
    }
}
