import FlowKitCluster
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization
import ZeroMQ

/// The web dashboard (`flowkit dashboard`, and on by default in `flowkit cluster`): one page and
/// its script, embedded in the binary (nothing is fetched from elsewhere), the monitor's events
/// live over a WebSocket (`/live`, the JSON lines of `flowkit monitor --json`), and emit, cancel
/// and state through a node's client socket. docs/DASHBOARD.md describes the routes.
///
/// HTTP/1.1 and the WebSocket on SwiftNIO's codecs. Every request, the WebSocket upgrade included,
/// passes ``DashboardAccess/check(_:)`` first; a refused upgrade is answered like any refused
/// request, `403` with the reason.
package struct DashboardServer: Sendable {
    /// A node the page can emit, cancel and read state through.
    package struct Node: Sendable {
        package var name: String
        package var clientEndpoint: String
        /// The node's CURVE public key, when CURVE is on.
        package var publicKey: CurveKey?

        package init(name: String, clientEndpoint: String, publicKey: CurveKey? = nil) {
            self.name = name
            self.clientEndpoint = clientEndpoint
            self.publicKey = publicKey
        }
    }

    package var host: String
    package var port: Int
    /// Who may use it: the token and the checks every request passes.
    package let access: DashboardAccess
    package let hub: DashboardHub
    package var nodes: [Node]
    package var transport: TransportOptions
    /// What the page says about CURVE: which key the dashboard connects with, if any.
    package var curveNote: String?
    package let logger: Logger

    package init(
        host: String, port: Int, access: DashboardAccess, hub: DashboardHub, nodes: [Node], transport: TransportOptions, curveNote: String?,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.access = access
        self.hub = hub
        self.nodes = nodes
        self.transport = transport
        self.curveNote = curveNote
        self.logger = logger
    }

    /// The largest request body taken (a bench line, an event to emit): events are at most 1 MiB
    /// by default (`--max-event-bytes`), escaped into a JSON string.
    static let maxBodyBytes = 8 << 20

    private enum Connection {
        case webSocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
        case http(NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>)
        /// An upgrade refused: the answer to write before closing. (SwiftNIO drops a declined
        /// upgrade request, so the routes never see it: its answer is decided here.)
        case declined(NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, DashboardRoutes.Response)
    }

    /// Serves until cancelled; `onListening` gets the page's URL, with its token, once the port is bound.
    package func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        let routes = DashboardRoutes(server: self, clients: NodeClients(nodes: nodes, transport: transport, logger: logger))
        let logger = logger
        let listener: NIOAsyncChannel<EventLoopFuture<Connection>, Never> = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    // `/live` upgrades when the same checks as any request allow it; otherwise the
                    // connection is answered why (403 with the reason) and closed.
                    let declined = Mutex<DashboardRoutes.Response?>(nil)
                    let upgrader = NIOTypedWebSocketServerUpgrader<Connection>(
                        maxFrameSize: 1 << 16,
                        shouldUpgrade: { channel, head in
                            let answer = routes.declineUpgrade(head)
                            declined.withLock { $0 = answer }
                            return channel.eventLoop.makeSucceededFuture(answer == nil ? HTTPHeaders() : nil)
                        },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                .webSocket(try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel))
                            }
                        }
                    )
                    let configuration = NIOTypedHTTPServerUpgradeConfiguration<Connection>(upgraders: [upgrader]) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            let http = try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                            return declined.withLock { $0 }.map { .declined(http, $0) } ?? .http(http)
                        }
                    }
                    let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                        configuration: .init(upgradeConfiguration: configuration)
                    )
                    // An upgrade request the WebSocket codec cannot take (no key, another version).
                    negotiated.whenFailure { _ in channel.close(promise: nil) }
                    return negotiated
                }
            }
        access.boundPort = listener.channel.localAddress?.port ?? port
        onListening(access.pageURL)
        defer { Task { await routes.clients.close() } }
        try await withThrowingDiscardingTaskGroup { group in
            try await listener.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask {
                        do {
                            switch try await connection.get() {
                            case .webSocket(let channel): try await routes.serveLive(channel)
                            case .http(let channel): try await routes.serveHTTP(channel)
                            case .declined(let channel, let answer): try await routes.serveDeclined(channel, answer)
                            }
                        } catch {
                            logger.debug("dashboard connection ended: \(error)")
                        }
                    }
                }
            }
        }
    }
}

/// One client per node the page has used, opened on first use.
actor NodeClients {
    let nodes: [DashboardServer.Node]
    let transport: TransportOptions
    let logger: Logger
    private var open: [String: ClusterClient] = [:]

    init(nodes: [DashboardServer.Node], transport: TransportOptions, logger: Logger) {
        self.nodes = nodes
        self.transport = transport
        self.logger = logger
    }

    /// The named node's client (the first node's when none is named).
    func client(_ name: String?) async throws -> ClusterClient {
        guard let node = name.map({ name in nodes.first { $0.name == name } }) ?? nodes.first else {
            throw DashboardRoutes.Failure(.badRequest, "no node named \(name ?? "") (known: \(nodes.map(\.name).joined(separator: ", ")))")
        }
        if let client = open[node.name] { return client }
        let client = try await ClusterClient(endpoint: node.clientEndpoint, transport: transport, serverPublicKey: node.publicKey, logger: logger)
        open[node.name] = client
        return client
    }

    func close() async {
        for client in open.values { await client.close() }
        open = [:]
    }
}
