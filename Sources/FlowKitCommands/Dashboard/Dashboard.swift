import FlowKitCluster
import Foundation
import Logging
import ZeroMQ

/// Runs the web dashboard for a cluster: a monitor feeding the hub, and the server.
package enum Dashboard {
    /// Watches the cluster at `publishEndpoints` and serves the page until cancelled.
    package static func run(
        _ server: DashboardServer,
        publishEndpoints: [String],
        serverKey: CurveKey?,
        onListening: @escaping @Sendable (String) -> Void
    ) async throws {
        let monitor = try await ClusterMonitor(
            publishEndpoints: publishEndpoints, topics: [], transport: server.transport, serverPublicKey: serverKey, logger: server.logger
        )
        let events = monitor.events
        do {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask {
                    for try await event in events { server.hub.publish(event) }
                }
                group.addTask { try await server.run(onListening: onListening) }
            }
        } catch {
            await monitor.close()
            throw error
        }
        await monitor.close()
    }

    /// Serves the dashboard of a local cluster in the background (`flowkit cluster`, `flowkit bench
    /// --serve-dashboard`); returns once it listens, with its URL (the token in it) and its access
    /// (the token, the base URL), or throws why it could not.
    ///
    /// - Parameter token: `false` serves without a token, on loopback only.
    package static func start(
        for file: LocalClusterFile, host: String, port: Int, token: Bool = true, logger: Logger
    ) async throws -> (task: Task<Void, any Error>, url: String, access: DashboardAccess) {
        let access = try DashboardAccess(listenHost: host, token: token)
        let (transport, serverKey) = try CurveClientOptions.resolve(localCluster: file) { $0.curve?.coordinatorPublicKey }
        let nodes = try file.nodes.map { node in
            DashboardServer.Node(
                name: node.name, clientEndpoint: node.clientEndpoint,
                publicKey: try file.curve?.nodePublicKeys[node.name].map { try CurveKey(z85: $0) }
            )
        }
        let server = DashboardServer(
            host: host, port: port, access: access, hub: DashboardHub(), nodes: nodes, transport: transport,
            curveNote: file.curve.map { _ in "CURVE on: this dashboard connects with the cluster's client key" }, logger: logger
        )
        let (listening, announce) = AsyncStream.makeStream(of: Result<String, any Error>.self)
        let task = Task {
            do {
                try await run(server, publishEndpoints: file.allCoordinators.map(\.publish), serverKey: serverKey) { url in
                    announce.yield(.success(url))
                }
            } catch is CancellationError {
            } catch {
                logger.error("the dashboard stopped: \(error)")
                announce.yield(.failure(error))
                throw error
            }
            announce.finish()
        }
        for await outcome in listening {
            return (task, try outcome.get(), access)
        }
        throw CancellationError()
    }

    /// Whether `host` only takes connections from this machine.
    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// `host:port` as a dashboard's address.
    package static func parse(listen: String) -> (host: String, port: Int)? {
        guard let colon = listen.lastIndex(of: ":"), let port = Int(listen[listen.index(after: colon)...]), (0...65_535).contains(port) else { return nil }
        let host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host.isEmpty ? nil : (host, port)
    }

    /// What the page and the log say about who may use it.
    package static func warning(host: String) -> String? {
        isLoopback(host)
            ? nil
            : "the dashboard listens on \(host), beyond this machine, in plain HTTP: its token is all that keeps others out, and anyone who can read the traffic can read it"
    }
}
