import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Why a request to etcd failed.
package struct EtcdError: Error, CustomStringConvertible, Sendable {
    package enum Kind: Sendable, Equatable {
        /// No endpoint answered (connection refused, reset, or the time ran out).
        case unreachable
        /// etcd answered with an error (its gRPC code and message).
        case refused(code: Int)
        /// The lease is gone: it expired or was revoked.
        case leaseNotFound
        /// The answer was not the JSON the gateway sends.
        case malformed
    }

    package var kind: Kind
    package var message: String

    package var description: String { "etcd: \(message)" }
}

/// A client of etcd's v3 API through its JSON gateway: HTTP/1.1 and JSON on etcd's client port,
/// the same port `etcdctl` uses, with no generated code.
///
/// Each request opens a connection to the first endpoint that accepts one (election traffic is a
/// keep-alive a second, and loopback connections cost microseconds), so a restarted or replaced
/// etcd member is simply used by the next request. A watch keeps its connection for as long as it
/// is iterated. Plain HTTP only: etcd's TLS is not supported.
package struct EtcdClient: Sendable {
    /// `host:port` of each member, tried in order.
    package let endpoints: [(host: String, port: Int)]
    /// How long one request may take, connecting included.
    package let timeout: Duration

    /// - Parameter endpoints: etcd's client URLs, `http://host:port` (the scheme may be left out).
    package init(endpoints: [String], timeout: Duration = .seconds(2)) throws {
        self.endpoints = try endpoints.map(Self.parse)
        guard !self.endpoints.isEmpty else { throw ConfigurationError("etcd needs at least one endpoint") }
        self.timeout = timeout
    }

    static func parse(_ endpoint: String) throws -> (host: String, port: Int) {
        var rest = Substring(endpoint)
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7) }
        if rest.hasPrefix("https://") { throw ConfigurationError("etcd endpoint \(endpoint): TLS is not supported; use http://") }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (1...65_535).contains(port), colon > rest.startIndex
        else { throw ConfigurationError("etcd endpoint \(endpoint) is not http://host:port") }
        return (String(rest[..<colon]), port)
    }

    // MARK: Leases

    /// Grants a lease of `ttl` seconds.
    package func grantLease(ttl: Int64) async throws -> EtcdLease {
        let reply: EtcdJSON.LeaseGrantResponse = try await call("/v3/lease/grant", ["TTL": .integer(ttl)])
        guard let id = reply.ID.flatMap(Int64.init), let granted = reply.TTL.flatMap(Int64.init) else {
            throw EtcdError(kind: .refused(code: 0), message: "no lease granted: \(reply.error ?? "no reason given")")
        }
        return EtcdLease(id: id, ttl: granted)
    }

    /// Renews a lease; returns the seconds it now has.
    ///
    /// - Throws: ``EtcdError/Kind/leaseNotFound`` once it has expired or was revoked.
    package func keepAlive(_ lease: Int64) async throws -> Int64 {
        let reply: EtcdJSON.LeaseKeepAliveResponse = try await call("/v3/lease/keepalive", ["ID": .string(String(lease))])
        guard let ttl = reply.result?.TTL.flatMap(Int64.init), ttl > 0 else {
            throw EtcdError(kind: .leaseNotFound, message: "lease \(lease) has expired")
        }
        return ttl
    }

    /// Revokes a lease, deleting the keys attached to it. Revoking a lease that is gone is not an error.
    package func revoke(_ lease: Int64) async throws {
        do {
            let _: EtcdJSON.ErrorBody = try await call("/v3/lease/revoke", ["ID": .string(String(lease))])
        } catch let error as EtcdError where error.kind == .leaseNotFound {
            return
        }
    }

    // MARK: Keys

    /// The key, if it exists, and the store's revision.
    package func get(_ key: String) async throws -> (EtcdKeyValue?, revision: Int64) {
        let reply: EtcdJSON.RangeResponse = try await call("/v3/kv/range", ["key": .string(EtcdJSON.base64(key))])
        return (reply.kvs?.first?.keyValue, Int64(reply.header?.revision ?? "0") ?? 0)
    }

    /// Every key that starts with `prefix`, in key order.
    package func get(prefix: String) async throws -> [EtcdKeyValue] {
        let reply: EtcdJSON.RangeResponse = try await call(
            "/v3/kv/range", ["key": .string(EtcdJSON.base64(prefix)), "range_end": .string(EtcdJSON.prefixEnd(prefix))]
        )
        return (reply.kvs ?? []).map(\.keyValue)
    }

    /// Puts a key (attached to `lease` unless it is 0); returns the new revision.
    @discardableResult
    package func put(_ key: String, _ value: [UInt8], lease: Int64 = 0) async throws -> Int64 {
        try await transaction(when: [], then: [.put(key, value, lease: lease)]).revision
    }

    /// Runs `then` if every compare holds, `otherwise` if not, atomically.
    package func transaction(when compares: [EtcdCompare], then: [EtcdOperation], otherwise: [EtcdOperation] = []) async throws -> EtcdTransactionResult {
        let request: JSONValue = [
            "compare": .array(compares.map(EtcdJSON.compare)),
            "success": .array(then.map(EtcdJSON.operation)),
            "failure": .array(otherwise.map(EtcdJSON.operation)),
        ]
        let reply: EtcdJSON.TxnResponse = try await call("/v3/kv/txn", request)
        let succeeded = reply.succeeded ?? false
        let branch = succeeded ? then : otherwise
        var responses = (reply.responses ?? []).makeIterator()
        var reads: [EtcdKeyValue?] = []
        for operation in branch {
            let response = responses.next()
            if case .get = operation { reads.append(response?.response_range?.kvs?.first?.keyValue) }
        }
        return EtcdTransactionResult(succeeded: succeeded, revision: Int64(reply.header?.revision ?? "0") ?? 0, reads: reads)
    }

    // MARK: Watches

    /// The changes to `key` (every key under it, with `prefix`) from `revision` on (0: from now),
    /// until the stream's consumer stops or the connection breaks (the stream then throws).
    package func watch(_ key: String, prefix: Bool = false, fromRevision revision: Int64 = 0) -> AsyncThrowingStream<[EtcdWatchEvent], any Error> {
        var create: [String: JSONValue] = ["key": .string(EtcdJSON.base64(key))]
        if prefix { create["range_end"] = .string(EtcdJSON.prefixEnd(key)) }
        if revision > 0 { create["start_revision"] = .string(String(revision)) }
        let body = Array(JSONValue.object(["create_request": .object(create)]).text().utf8)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [EtcdWatchEvent].self)
        let task = Task {
            do {
                try await readLines(path: "/v3/watch", body: body) { line in
                    let reply = try JSONDecoder().decode(EtcdJSON.WatchResponse.self, from: Data(line))
                    if let error = reply.error {
                        throw EtcdError(kind: .refused(code: error.code ?? 0), message: error.message ?? error.error ?? "watch failed")
                    }
                    guard let result = reply.result else { return }
                    if result.canceled == true {
                        let reason = result.compact_revision.map { "revision \($0) was compacted" } ?? result.cancel_reason ?? "cancelled"
                        throw EtcdError(kind: .refused(code: 11), message: "the watch ended: \(reason)")
                    }
                    let events = (result.events ?? []).compactMap { event -> EtcdWatchEvent? in
                        guard let kv = event.kv else { return nil }
                        return EtcdWatchEvent(kind: event.type == "DELETE" ? .delete : .put, keyValue: kv.keyValue)
                    }
                    if !events.isEmpty { continuation.yield(events) }
                }
                continuation.finish(throwing: EtcdError(kind: .unreachable, message: "etcd closed the watch"))
            } catch {
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    // MARK: HTTP

    private func call<Reply: Decodable>(_ path: String, _ request: JSONValue) async throws -> Reply {
        let (status, reply) = try await exchange(path: path, body: Array(request.text().utf8))
        guard status == .ok else {
            let error = try? JSONDecoder().decode(EtcdJSON.ErrorBody.self, from: Data(reply))
            let code = error?.code ?? 0
            let message = error?.message ?? error?.error ?? "HTTP \(status.code) from \(path)"
            throw EtcdError(kind: code == 5 && message.contains("lease") ? .leaseNotFound : .refused(code: code), message: message)
        }
        do {
            return try JSONDecoder().decode(Reply.self, from: Data(reply))
        } catch {
            throw EtcdError(kind: .malformed, message: "\(path) answered \(String(decoding: reply.prefix(200), as: UTF8.self)): \(error)")
        }
    }

    /// One request and its whole answer, within ``timeout``.
    private func exchange(path: String, body: [UInt8]) async throws -> (HTTPResponseStatus, [UInt8]) {
        try await withDeadline(timeout, path: path) {
            var status = HTTPResponseStatus.ok
            var reply: [UInt8] = []
            try await self.post(path: path, body: body, status: { status = $0 }) { reply += $0 }
            return (status, reply)
        }
    }

    /// Sends a POST and hands each line of the answer's body (a watch's messages are one per
    /// line) to `line` as it arrives.
    private func readLines(path: String, body: [UInt8], line: ([UInt8]) throws -> Void) async throws {
        var pending: [UInt8] = []
        var status = HTTPResponseStatus.ok
        var errorBody: [UInt8] = []
        try await post(path: path, body: body, status: { status = $0 }) { chunk in
            guard status == .ok else { errorBody += chunk; return }
            pending += chunk
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let message = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                if !message.isEmpty { try line(message) }
            }
        }
        guard status == .ok else {
            let error = try? JSONDecoder().decode(EtcdJSON.ErrorBody.self, from: Data(errorBody))
            throw EtcdError(kind: .refused(code: error?.code ?? 0), message: error?.message ?? "HTTP \(status.code) from \(path)")
        }
        if !pending.isEmpty { try line(pending) }
    }

    /// Sends a POST; hands the answer's status and each chunk of its body over as they arrive.
    private func post(
        path: String, body: [UInt8], status: (HTTPResponseStatus) -> Void, chunk: ([UInt8]) throws -> Void
    ) async throws {
        let (channel, endpoint) = try await connect()
        try await channel.executeThenClose { inbound, outbound in
            var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
            // The member this connection reached, port included (RFC 9112, section 3.2).
            head.headers.add(name: "Host", value: "\(endpoint.host):\(endpoint.port)")
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: "\(body.count)")
            try await outbound.write(.head(head))
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body))))
            try await outbound.write(.end(nil))
            for try await part in inbound {
                switch part {
                case .head(let response): status(response.status)
                case .body(let buffer): try chunk(Array(buffer.readableBytesView))
                case .end: return
                }
            }
            throw EtcdError(kind: .unreachable, message: "etcd closed the connection mid-answer to \(path)")
        }
    }

    /// A connection to the first endpoint that accepts one, and that endpoint.
    private func connect() async throws -> (NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, (host: String, port: Int)) {
        var failures: [String] = []
        for endpoint in endpoints {
            do {
                let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(.nanoseconds(timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000))
                    .connect(host: endpoint.host, port: endpoint.port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHTTPClientHandlers()
                            return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                        }
                    }
                return (channel, endpoint)
            } catch {
                failures.append("\(endpoint.host):\(endpoint.port): \(error)")
            }
        }
        throw EtcdError(kind: .unreachable, message: "no etcd endpoint answered (\(failures.joined(separator: "; ")))")
    }

    private func withDeadline<T: Sendable>(_ timeout: Duration, path: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else {
                throw EtcdError(kind: .unreachable, message: "etcd did not answer \(path) within \(timeout)")
            }
            return result
        }
    }
}
