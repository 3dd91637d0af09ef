import FlowKitCluster
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// What the dashboard answers each request (docs/DASHBOARD.md, "Routes"), and its `/live`
/// WebSocket. Every request passes ``DashboardAccess/check(_:)`` first. A failure is answered
/// `{"error":{"message":…}}` with its status (a refusal also says its `reason`).
struct DashboardRoutes: Sendable {
    let server: DashboardServer
    let clients: NodeClients

    /// A request the routes cannot serve: its status and what to tell the page.
    struct Failure: Error {
        var status: HTTPResponseStatus
        var message: String

        init(_ status: HTTPResponseStatus, _ message: String) {
            self.status = status
            self.message = message
        }
    }

    struct Response: Sendable {
        var status: HTTPResponseStatus = .ok
        var contentType = "application/json"
        var body = ""
        var headers: [(String, String)] = []

        static func json(_ value: some Encodable) -> Response { Response(body: jsonLine(value)) }

        static func failure(_ status: HTTPResponseStatus, _ message: String, reason: String? = nil) -> Response {
            var error: [String: JSONValue] = ["message": .string(message)]
            if let reason { error["reason"] = .string(reason) }
            return Response(status: status, body: JSONValue.object(["error": .object(error)]).text())
        }
    }

    // MARK: Reading requests

    /// The URI's path, without the query.
    static func path(of uri: String) -> String { String(uri.prefix { $0 != "?" }) }

    /// The URI's query, decoded; of a name given twice, the first.
    static func query(of uri: String) -> [String: String] {
        var query: [String: String] = [:]
        for item in URLComponents(string: uri)?.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value ?? "" }
        return query
    }

    /// What ``DashboardAccess`` reads of a request.
    static func accessRequest(_ head: HTTPRequestHead) -> DashboardAccess.Request {
        DashboardAccess.Request(
            method: head.method.rawValue, path: path(of: head.uri), host: head.headers["host"].first, origin: head.headers["origin"].first,
            contentType: head.headers["content-type"].first, authorization: head.headers["authorization"].first, cookies: head.headers["cookie"],
            queryToken: query(of: head.uri)["token"]
        )
    }

    // MARK: HTTP

    /// Answers a connection's requests, one at a time, until it closes or asks to.
    func serveHTTP(_ channel: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async throws {
        try await channel.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let started):
                    (head, tooLarge) = (started, false)
                    body.clear()
                case .body(var chunk):
                    if body.readableBytes + chunk.readableBytes > DashboardServer.maxBodyBytes { tooLarge = true } else { body.writeBuffer(&chunk) }
                case .end:
                    guard let request = head else { continue }
                    head = nil
                    let response =
                        tooLarge
                        ? .failure(.payloadTooLarge, "a request body of at most \(DashboardServer.maxBodyBytes) bytes") : await respond(to: request, body: body)
                    try await write(response, keepAlive: request.isKeepAlive, to: outbound)
                    if !request.isKeepAlive { return }
                }
            }
        }
    }

    /// Why a WebSocket upgrade is refused (the access check, or a path that is not `/live`), or `nil`.
    func declineUpgrade(_ head: HTTPRequestHead) -> Response? {
        let request = Self.accessRequest(head)
        if let refusal = server.access.check(request) {
            server.access.record(refusal, request, logger: server.logger)
            return .failure(.forbidden, refusal.message, reason: refusal.reason.rawValue)
        }
        let path = Self.path(of: head.uri)
        return path == "/live" ? nil : .failure(.notFound, "\(path) is no WebSocket: the dashboard's is /live")
    }

    /// Answers an upgrade request refused, and closes the connection.
    func serveDeclined(_ channel: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, _ answer: Response) async throws {
        try await channel.executeThenClose { _, outbound in
            try await write(answer, keepAlive: false, to: outbound)
        }
    }

    /// The access check, then the route.
    func respond(to head: HTTPRequestHead, body: ByteBuffer) async -> Response {
        let request = Self.accessRequest(head)
        if let refusal = server.access.check(request) {
            server.access.record(refusal, request, logger: server.logger)
            return .failure(.forbidden, refusal.message, reason: refusal.reason.rawValue)
        }
        do {
            return try await route(head, body: body)
        } catch let failure as Failure {
            return .failure(failure.status, failure.message)
        } catch {
            return .failure(Self.status(of: error), "\(error)")
        }
    }

    /// What the cluster's answer means in HTTP: a refusal of the request (a bad event, an unknown
    /// flow) is the request's fault (400, 404 for no such instance); one worth retrying (overloaded,
    /// the coordinator away) is 503; no answer at all is 504; anything else, 502.
    static func status(of error: any Error) -> HTTPResponseStatus {
        switch error {
        case let refusal as ProtocolError:
            switch refusal.code {
            case .overloaded, .coordinatorUnavailable, .internalError: .serviceUnavailable
            case .notFound: .notFound
            default: .badRequest
            }
        case let error as ClusterClientError where error.code == .timedOut: .gatewayTimeout
        default: .badGateway
        }
    }

    private func route(_ head: HTTPRequestHead, body: ByteBuffer) async throws -> Response {
        let path = Self.path(of: head.uri)
        let query = Self.query(of: head.uri)
        let (hub, access) = (server.hub, server.access)
        switch (head.method, path) {
        case (.GET, "/"):
            // The printed URL carries the token: hand it to the browser as a cookie and take it out
            // of the address bar (and of the history).
            if query["token"] != nil, let cookie = access.setCookie {
                return Response(status: .seeOther, contentType: "text/plain", headers: [("location", "/"), ("set-cookie", cookie)])
            }
            return Response(contentType: "text/html; charset=utf-8", body: DashboardPage.html)
        case (.GET, "/dashboard.js"):
            return Response(contentType: "text/javascript; charset=utf-8", body: DashboardPage.script)
        case (.GET, "/dashboard.css"):
            return Response(contentType: "text/css; charset=utf-8", body: DashboardPage.style)
        case (.GET, "/api/snapshot"):
            return Response(body: "[" + hub.snapshot.joined(separator: ",") + "]")
        case (.GET, "/api/info"):
            let refused = Dictionary(uniqueKeysWithValues: DashboardAccess.Reason.allCases.map { ($0.rawValue, access.refusals[$0, default: 0]) })
            return .json(Info(nodes: server.nodes.map(\.name), curve: server.curveNote, pages: hub.pages, token: access.token != nil, refused: refused))
        case (.GET, "/api/state"):
            guard let address = query["address"], !address.isEmpty else { throw Failure(.badRequest, "say which instance: /api/state?address=flow/key") }
            let state = try await clients.client(query["node"]).query(address)
            let json = String(decoding: state.json, as: UTF8.self)
            return Response(
                body: #"{"address":\#(jsonLine(address)),"applied":\#(state.applied),"lastSeq":\#(state.lastSeq),"state":\#(json.isEmpty ? "null" : json)}"#
            )
        case (.POST, "/api/bench"):
            let bench = try decode(BenchLive.self, from: body, expected: "a bench line (docs/DASHBOARD.md, \"bench\")")
            if let problem = bench.problem { throw Failure(.badRequest, "not a bench line: \(problem)") }
            hub.publish(bench: bench)
            return .json(Info.Pages(pages: hub.pages))
        case (.POST, "/api/emit"):
            let command = try decode(EmitRequest.self, from: body, expected: #"{"address":"flow/key","event":"<the event as JSON text>","node":"node-1"}"#)
            return .json(try await clients.client(command.node).emit(json: command.event, to: command.address))
        case (.POST, "/api/cancel"):
            let command = try decode(CancelRequest.self, from: body, expected: #"{"address":"flow/key","id":"timer","node":"node-1"}"#)
            return .json(try await clients.client(command.node).cancel(at: command.address, id: command.id))
        case (.GET, "/live"):
            throw Failure(.badRequest, "/live is the dashboard's WebSocket: open it with 'Upgrade: websocket'")
        case (_, "/"), (_, "/dashboard.js"), (_, "/dashboard.css"), (_, "/api/snapshot"), (_, "/api/info"), (_, "/api/state"), (_, "/live"),
            (_, "/api/bench"), (_, "/api/emit"), (_, "/api/cancel"):
            throw Failure(.methodNotAllowed, "\(head.method.rawValue) \(path) is not served (docs/DASHBOARD.md lists the routes)")
        default:
            throw Failure(.notFound, "no such route: \(head.method.rawValue) \(path) (docs/DASHBOARD.md lists the routes)")
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, from body: ByteBuffer, expected: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw Failure(.badRequest, "the body is not \(expected): \(Self.describe(error))")
        }
    }

    /// A decoding error in a sentence: which field, and what was wrong with it.
    private static func describe(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _): "no \"\(key.stringValue)\""
        case .typeMismatch(_, let context), .valueNotFound(_, let context): "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" \(context.debugDescription.lowercased())"
        case .dataCorrupted(let context): "not JSON (\(context.underlyingError.map { "\($0)" } ?? context.debugDescription))"
        default: "\(error)"
        }
    }

    private func write(
        _ response: Response, keepAlive: Bool, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        let body = ByteBuffer(string: response.body)
        var headers = HTTPHeaders([("content-type", response.contentType), ("content-length", "\(body.readableBytes)"), ("cache-control", "no-store")])
        for (name, value) in response.headers { headers.add(name: name, value: value) }
        if !keepAlive { headers.add(name: "connection", value: "close") }
        try await outbound.write(contentsOf: [.head(HTTPResponseHead(version: .http1_1, status: response.status, headers: headers)), .body(.byteBuffer(body)), .end(nil)])
    }

    // MARK: The live WebSocket

    /// `/live`: where things stand, then the hub's lines as they come, one or more JSON lines a
    /// message, until the page goes away.
    func serveLive(_ channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>) async throws {
        let hub = server.hub
        let (page, snapshot, lines) = hub.join()
        defer { hub.leave(page) }
        try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await frame in inbound {
                        switch frame.opcode {
                        case .ping:
                            try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
                        case .connectionClose:
                            var data = frame.unmaskedData
                            try await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, data: data.readSlice(length: 2) ?? ByteBuffer()))
                            return
                        default:
                            continue
                        }
                    }
                }
                group.addTask {
                    if !snapshot.isEmpty { try await outbound.write(Self.text(snapshot.joined(separator: "\n"))) }
                    for await message in lines { try await outbound.write(Self.text(message)) }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    private static func text(_ text: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text))
    }

    // MARK: Bodies

    private struct Info: Encodable {
        var nodes: [String]
        var curve: String?
        /// Pages open now (each holds the `/live` WebSocket).
        var pages: Int
        /// Whether requests need the token.
        var token: Bool
        /// Requests refused so far, by reason (docs/SECURITY.md, "The dashboard").
        var refused: [String: Int]

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
}
