import FlowKitCluster
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ZeroMQ

/// The web dashboard (`flowkit dashboard`, and on by default in `flowkit cluster`): one page and
/// its script, embedded in the binary (nothing is fetched from elsewhere), the monitor's events
/// live over a WebSocket (`/live`, the JSON lines of `flowkit monitor --json`), and emit, cancel
/// and state through a node's client socket. docs/DASHBOARD.md describes the routes.
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
    package let hub: DashboardHub
    package var nodes: [Node]
    package var transport: TransportOptions
    /// What the page says about CURVE: which key the dashboard connects with, if any.
    package var curveNote: String?
    package let logger: Logger

    package init(host: String, port: Int, hub: DashboardHub, nodes: [Node], transport: TransportOptions, curveNote: String?, logger: Logger) {
        self.host = host
        self.port = port
        self.hub = hub
        self.nodes = nodes
        self.transport = transport
        self.curveNote = curveNote
        self.logger = logger
    }

    /// Serves until cancelled; `onListening` gets the page's URL once the port is bound.
    package func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        let clients = NodeClients(nodes: nodes, transport: transport, logger: logger)
        let router = Router()
        router.get("/") { _, _ in Self.text(DashboardPage.html, type: "text/html; charset=utf-8") }
        router.get("/dashboard.js") { _, _ in Self.text(DashboardPage.script, type: "text/javascript; charset=utf-8") }
        router.get("/dashboard.css") { _, _ in Self.text(DashboardPage.style, type: "text/css; charset=utf-8") }
        router.get("/api/snapshot") { [hub] _, _ in Self.text("[" + hub.snapshot.joined(separator: ",") + "]", type: "application/json") }
        router.get("/api/info") { [nodes, curveNote, hub] _, _ in
            Self.text(jsonLine(Info(nodes: nodes.map(\.name), curve: curveNote, pages: hub.pages)), type: "application/json")
        }
        router.post("/api/bench") { [hub] request, context in
            let bench: BenchLive
            do {
                bench = try await request.decode(as: BenchLive.self, context: context)
            } catch {
                throw HTTPError(.badRequest, message: "not a bench line (docs/DASHBOARD.md): \(error)")
            }
            if let problem = bench.problem { throw HTTPError(.badRequest, message: "not a bench line: \(problem)") }
            hub.publish(bench: bench)
            return Self.text(jsonLine(Info.Pages(pages: hub.pages)), type: "application/json")
        }
        router.post("/api/emit") { request, context in
            let command = try await request.decode(as: EmitRequest.self, context: context)
            let ordered = try await Self.answer { try await clients.client(command.node).emit(json: command.event, to: command.address) }
            return Self.text(jsonLine(ordered), type: "application/json")
        }
        router.post("/api/cancel") { request, context in
            let command = try await request.decode(as: CancelRequest.self, context: context)
            let ordered = try await Self.answer { try await clients.client(command.node).cancel(at: command.address, id: command.id) }
            return Self.text(jsonLine(ordered), type: "application/json")
        }
        router.get("/api/state") { request, _ in
            guard let address = request.uri.queryParameters.get("address"), !address.isEmpty else {
                throw HTTPError(.badRequest, message: "say which instance: /api/state?address=flow/key")
            }
            let state = try await Self.answer { try await clients.client(request.uri.queryParameters.get("node")).query(address) }
            let json = String(decoding: state.json, as: UTF8.self)
            return Self.text(#"{"address":\#(jsonLine(address)),"applied":\#(state.applied),"lastSeq":\#(state.lastSeq),"state":\#(json.isEmpty ? "null" : json)}"#, type: "application/json")
        }

        let webSockets = Router(context: BasicWebSocketRequestContext.self)
        webSockets.ws("/live") { _, _ in
            .upgrade([:])
        } onUpgrade: { [hub] inbound, outbound, _ in
            let (page, snapshot, lines) = hub.join()
            defer { hub.leave(page) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in inbound {}  // until the page goes away
                }
                group.addTask {
                    if !snapshot.isEmpty { try await outbound.write(.text(snapshot.joined(separator: "\n"))) }
                    for await message in lines { try await outbound.write(.text(message)) }
                }
                try await group.next()
                group.cancelAll()
            }
        }
        let (host, port) = (host, port)
        // Hummingbird logs its own shutdown (a cancellation) as an error: only its critical lines.
        var serverLogger = logger
        serverLogger.logLevel = .critical
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: webSockets),
            configuration: .init(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in onListening("http://\(host):\(channel.localAddress?.port ?? port)/") },
            logger: serverLogger
        )
        defer { Task { await clients.close() } }
        try await app.run()
    }

    private struct Info: Encodable {
        var nodes: [String]
        var curve: String?
        /// Pages open now (each holds the `/live` WebSocket).
        var pages: Int

        struct Pages: Encodable {
            var pages: Int
        }
    }

    private struct EmitRequest: Decodable {
        var address: String
        /// The event as JSON text, as `flowkit emit` takes it.
        var event: String
        var node: String?
    }

    private struct CancelRequest: Decodable {
        var address: String
        /// The effect's cancel id; none cancels every effect of the instance.
        var id: String?
        var node: String?
    }

    private static func text(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Runs a request to the cluster; its failure becomes the page's error, with the reason.
    private static func answer<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(.badGateway, message: "\(error)")
        }
    }
}

/// One client per node the page has used, opened on first use.
private actor NodeClients {
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
            throw HTTPError(.badRequest, message: "no node named \(name ?? "") (known: \(nodes.map(\.name).joined(separator: ", ")))")
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
