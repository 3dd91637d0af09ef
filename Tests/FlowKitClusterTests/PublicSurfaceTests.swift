import Testing

/// `import FlowKitCluster` gives an embedder what README's embedding section uses (a coordinator
/// and a node in their own process, a client, a monitor, a remote flow) and no wire message:
/// those are `@_spi(Wire)`, for this package's tools and tests.
@Suite struct PublicSurfaceTests {
    static let embedder = """
        import FlowKit
        import FlowKitCluster
        import Logging

        struct Tally: ReplicatedFlow {
            struct State: Codable, Hashable, Sendable { var total = 0 }
            enum Event: Codable, Sendable { case add(Int) }
            static var initialState: State { State() }
            func reduce(into state: inout State, event: Event) -> Effect<Event> {
                switch event { case .add(let amount): state.total += amount }
                return .none
            }
        }

        func embed(endpoints: CoordinatorEndpoints) async throws {
            var registry = FlowRegistry()
            registry.register(Tally.self)
            let logger = Logger(label: "embedder")
            let coordinator = Coordinator(configuration: CoordinatorConfiguration(), registry: registry, logger: logger)
            try await coordinator.run { endpoints in print(endpoints.submit) }
            var configuration = NodeConfiguration(id: 1, coordinator: endpoints)
            configuration.transport = TransportOptions()
            try await Node(configuration: configuration, registry: registry, logger: logger).run { client in print(client) }

            let client = try await ClusterClient(endpoint: "tcp://127.0.0.1:7410", logger: logger)
            let ordered: ClusterClient.Ordered = try await client.emit(json: #"{"add":{"_0":2}}"#, to: "tally/a", wait: .applied)
            let state: ClusterClient.State = try await client.query("tally/a", minApplied: ordered.seq)
            let status: NodeStatus = try await client.status()
            _ = (state, status)
            let tally = try await client.flow(Tally.self, "a")
            await tally.subscribe { state in print(state.total) }

            let monitor = try await ClusterMonitor(publishEndpoint: endpoints.publish, logger: logger)
            for try await event in monitor.events {
                switch event {
                case .entries(let entries): print(entries.map(\\.seq), entries.map(\\.address))
                case .heartbeat(let heartbeat): print(heartbeat.head)
                case .status(let status): print(status.head)
                case .alarm(let alarm): print(alarm.message)
                case .fellBehind(let expected, let got): print(expected, got)
                }
            }
        }
        """

    /// Every wire message and codec helper; none may be reachable through a plain import.
    static let wireTypes = [
        "SubmitMessage", "AckMessage", "HelloMessage", "WelcomeMessage", "NodeInfo", "CoordinatorInfo",
        "NodeReportMessage", "MessageType", "WireHeader", "RangeRequest", "RangeMessage", "SnapshotRequest",
        "SnapshotChunkMessage", "SyncRequest", "ClientRequest", "ClientReply", "ErrorReply", "EntriesMessage",
        "ControlTopic", "HeartbeatMessage", "ClusterStatusMessage", "AlarmMessage", "Submission", "HopTrace",
        "BackgroundWork",
    ]

    @Test func anEmbedderHasWhatTheReadmeUses() throws {
        let result = try TypeCheck.run(Self.embedder)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func noWireMessageIsPublic() throws {
        let program = "import FlowKitCluster\n" + Self.wireTypes.map { "let _: \($0)? = nil" }.joined(separator: "\n")
        let result = try TypeCheck.run(program)
        #expect(result.status != 0)
        for name in Self.wireTypes {
            #expect(result.output.contains("'\(name)' is inaccessible") || result.output.contains("cannot find type '\(name)' in scope"), "\(name): \(result.output)")
        }

        // The same names with the SPI import: they exist, so the check above can fail.
        let withSPI = try TypeCheck.run("@_spi(Wire) import FlowKitCluster\n" + Self.wireTypes.map { "let _: \($0)? = nil" }.joined(separator: "\n"))
        #expect(withSPI.status == 0, "\(withSPI.output)")
    }
}
