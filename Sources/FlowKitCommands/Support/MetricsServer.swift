import CFlowKitSupport
import Foundation
import Logging
import Metrics
import Prometheus

#if canImport(Glibc)
import Glibc
#endif

/// Serves the process's metrics in Prometheus text format at `GET /metrics`, on a thread of its own.
///
/// Deliberately small: one request per connection, `Connection: close`, no keep-alive. Prometheus
/// scrapes a few times a minute; nothing here needs more.
package final class MetricsServer: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let socket: Int32
    /// `host:port` actually bound (the port the OS chose for 0 included).
    package let endpoint: String

    /// Bootstraps swift-metrics with a Prometheus registry and listens on `address` (`host:port`).
    ///
    /// Call before creating a node or coordinator: metrics bind to the backend when they are made.
    package static func start(address: String, logger: Logger) throws -> MetricsServer {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return try MetricsServer(address: address, registry: registry, logger: logger)
    }

    private init(address: String, registry: PrometheusCollectorRegistry, logger: Logger) throws {
        self.registry = registry
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw SettingsError("--metrics must be host:port, e.g. 127.0.0.1:9400; got \(address)")
        }
        let host = String(address[..<colon])
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SettingsError("cannot create the metrics socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &addr.sin_addr) == 1 else {
            close(fd)
            throw SettingsError("--metrics host must be an IPv4 address; got \(host)")
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw SettingsError("cannot listen for metrics on \(address): \(reason)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        socket = fd
        endpoint = "\(host):\(UInt16(bigEndian: actual.sin_port))"
        let memory = MallocGauges()
        let thread = Thread { [registry] in Self.serve(fd, registry: registry, before: memory.refresh) }
        thread.name = "flowkit-metrics"
        thread.start()
        logger.info("metrics at http://\(endpoint)/metrics")
    }

    private static func serve(_ listener: Int32, registry: PrometheusCollectorRegistry, before scrape: () -> Void) {
        while true {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            var request = [UInt8](repeating: 0, count: 4_096)
            let count = recv(connection, &request, request.count, 0)
            let line = count > 0 ? String(decoding: request[..<count], as: UTF8.self).prefix { $0 != "\r" && $0 != "\n" } : ""
            let response: [UInt8]
            if line.hasPrefix("GET /metrics") {
                scrape()
                let body = registry.emitToBuffer()
                response = Array("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
            } else {
                let body = Array("try GET /metrics\n".utf8)
                response = Array("HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
            }
            var sent = 0
            while sent < response.count {
                let written = response[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written <= 0 { break }
                sent += written
            }
            close(connection)
        }
    }
}

/// What the allocator holds, as gauges read at each scrape: a process's RSS alone cannot tell live
/// data from pages the allocator freed but has not yet returned (jemalloc purges them after its decay
/// time), nor from the address space it keeps for reuse.
private struct MallocGauges {
    private let allocated = Gauge(label: "flowkit_malloc_allocated_bytes")
    private let active = Gauge(label: "flowkit_malloc_active_bytes")
    private let metadata = Gauge(label: "flowkit_malloc_metadata_bytes")
    private let resident = Gauge(label: "flowkit_malloc_resident_bytes")
    private let retained = Gauge(label: "flowkit_malloc_retained_bytes")

    func refresh() {
        var stats = flowkit_malloc_stats()
        guard flowkit_malloc_stats(&stats) == 0 else { return }
        allocated.record(stats.allocated)
        active.record(stats.active)
        metadata.record(stats.metadata)
        resident.record(stats.resident)
        retained.record(stats.retained)
    }
}
