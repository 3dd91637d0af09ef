import Foundation
import NIOSSL

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
/// Requests share one process-wide pool of kept-alive connections (async-http-client): the
/// election's renewals and reads open no connection each. A request goes to the member that last
/// answered; one that refuses, cannot be reached, or does not answer within ``timeout`` is passed
/// over for the next, once round the list, and the member that answers is asked first from then
/// on (so a request may take up to ``timeout`` per member). A watch holds a connection of its own
/// for as long as it is iterated. `https://` members are reached over TLS, their certificates
/// checked against the system's trust roots, or as ``tlsConfiguration`` says.
package struct EtcdClient: Sendable {
    /// Each member, tried in turn from the one that last answered.
    package let endpoints: [EtcdEndpoint]
    /// How long one member has to answer one request, connecting included; a watch's only
    /// deadline is its answer's head.
    package let timeout: Duration
    /// For `https://` members; nil: the default, full verification against the system's roots.
    package let tlsConfiguration: TLSConfiguration?
    /// Which member answered last, shared by every copy of this client.
    let answering = AnsweringMember()

    /// - Parameter endpoints: etcd's client URLs, `http://host:port` or `https://host:port` (the
    ///   scheme may be left out: plain HTTP).
    package init(endpoints: [String], timeout: Duration = .seconds(2), tlsConfiguration: TLSConfiguration? = nil) throws {
        self.endpoints = try endpoints.map(EtcdEndpoint.init(parsing:))
        guard !self.endpoints.isEmpty else { throw ConfigurationError("etcd needs at least one endpoint") }
        self.timeout = timeout
        self.tlsConfiguration = tlsConfiguration
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
}
