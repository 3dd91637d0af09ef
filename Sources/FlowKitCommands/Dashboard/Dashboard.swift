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
            : "the dashboard listens on \(host), beyond this machine, and has no authentication: anyone who reaches it can emit and cancel"
    }
}
