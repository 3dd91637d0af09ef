import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One etcd member's client URL.
package struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// `https://`: reached over TLS.
    package var tls: Bool
    /// A name or an address (an IPv6 one in brackets, as the URL writes it).
    package var host: String
    package var port: Int

    /// `http://host:port` or `https://host:port` (no scheme: plain HTTP).
    init(parsing endpoint: String) throws {
        var rest = Substring(endpoint)
        tls = rest.hasPrefix("https://")
        if rest.hasPrefix("http://") { rest = rest.dropFirst(7) }
        if tls { rest = rest.dropFirst(8) }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), let colon = rest.lastIndex(of: ":"), colon > rest.startIndex,
            let port = Int(rest[rest.index(after: colon)...]), (1...65_535).contains(port)
        else { throw ConfigurationError("etcd endpoint \(endpoint) is not http://host:port or https://host:port") }
        (host, self.port) = (String(rest[..<colon]), port)
    }

    /// The base of each request's URL, and so of its `Host` header.
    package var description: String { "\(tls ? "https" : "http")://\(host):\(port)" }
}

/// The index of the member that answered last (see ``EtcdClient/current``).
final class AnsweringMember: Sendable {
    let index = Atomic<Int>(0)
}

extension EtcdClient {
    /// Every etcd client's connections, for the life of the process: a pool per member, kept
    /// alive between requests.
    private static let http: HTTPClient = {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            // No read timeout: each request has its own deadline, and a watch may be quiet for hours.
            timeout: .init(connect: .seconds(10), read: nil),
            decompression: .disabled
        )
        configuration.httpVersion = .http1Only
        // A member that refuses fails the request at once, so it moves on to the next member
        // rather than retry this one until its deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        // Each watch holds a connection while it lasts; requests beyond the limit would queue.
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The member the next request goes to first: the one that answered last.
    var current: EtcdEndpoint { endpoints[answering.index.load(ordering: .relaxed)] }

    /// Posts `request` and decodes the answer.
    func call<Reply: Decodable>(_ path: String, _ request: JSONValue) async throws -> Reply {
        let body = Array(request.text().utf8)
        let (status, reply) = try await firstAnswering(path) { endpoint in
            // Within the deadline the answer's body too: the HTTP client's own ends at its head.
            try await withDeadline(timeout, path: path) {
                let response = try await Self.http.execute(self.request(endpoint, path, body), deadline: .now() + TimeAmount(self.timeout))
                var reply: [UInt8] = []
                for try await chunk in response.body { reply += chunk.readableBytesView }
                return (response.status, reply)
            }
        }
        guard status == .ok else { throw Self.refusal(status, reply, path) }
        do {
            return try JSONDecoder().decode(Reply.self, from: Data(reply))
        } catch {
            throw EtcdError(kind: .malformed, message: "\(path) answered \(String(decoding: reply.prefix(200), as: UTF8.self)): \(error)")
        }
    }

    /// Posts `body` and hands each line of the answer (a watch's messages are one per line) to
    /// `line` as it arrives, for as long as the answer lasts: only its head has a deadline.
    func readLines(path: String, body: [UInt8], line: ([UInt8]) throws -> Void) async throws {
        let response = try await firstAnswering(path) { endpoint in
            try await Self.http.execute(request(endpoint, path, body), deadline: .now() + TimeAmount(timeout))
        }
        var pending: [UInt8] = []
        var chunks = response.body.makeAsyncIterator()
        while true {
            let chunk: ByteBuffer?
            do {
                chunk = try await chunks.next()
            } catch where !Task.isCancelled {
                throw EtcdError(kind: .unreachable, message: "\(path) broke off: \(error)")
            }
            guard let chunk else { break }
            pending += chunk.readableBytesView
            guard response.status == .ok else { continue }
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let message = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                if !message.isEmpty { try line(message) }
            }
        }
        guard response.status == .ok else { throw Self.refusal(response.status, pending, path) }
        if !pending.isEmpty { try line(pending) }
    }

    /// Runs `attempt` on each member in turn, from the one that answered last, until one answers
    /// (with an HTTP status, whatever it is), and remembers that one.
    private func firstAnswering<Answer>(_ path: String, _ attempt: (EtcdEndpoint) async throws -> Answer) async throws -> Answer {
        let first = answering.index.load(ordering: .relaxed)
        var failures: [String] = []
        for offset in endpoints.indices {
            let index = (first + offset) % endpoints.count
            do {
                let answer = try await attempt(endpoints[index])
                if offset > 0 { answering.index.store(index, ordering: .relaxed) }
                return answer
            } catch {
                try Task.checkCancellation()
                failures.append("\(endpoints[index]): \(error)")
            }
        }
        throw EtcdError(kind: .unreachable, message: "no etcd endpoint answered \(path) (\(failures.joined(separator: "; ")))")
    }

    private func request(_ endpoint: EtcdEndpoint, _ path: String, _ body: [UInt8]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: "\(endpoint)\(path)")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
        if endpoint.tls { request.tlsConfiguration = tlsConfiguration }
        return request
    }

    /// etcd's answer other than 200: its gRPC code and message, when the body carries them.
    private static func refusal(_ status: HTTPResponseStatus, _ body: [UInt8], _ path: String) -> EtcdError {
        let error = try? JSONDecoder().decode(EtcdJSON.ErrorBody.self, from: Data(body))
        let code = error?.code ?? 0
        let message = error?.message ?? error?.error ?? "HTTP \(status.code) from \(path)"
        return EtcdError(kind: code == 5 && message.contains("lease") ? .leaseNotFound : .refused(code: code), message: message)
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
