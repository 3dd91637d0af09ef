import CoreFoundation  // timeval, as Foundation sees it on Linux
import Foundation

/// Reads a process's Prometheus metrics (`GET /metrics`) and picks out the samples the fuzz and
/// slow-consumer checks compare.
package struct MetricsScrape: Sendable {
    /// `name{labels}` → value.
    package let samples: [String: Double]

    package static func fetch(_ hostPort: String) throws -> MetricsScrape {
        MetricsScrape(samples: parse(try get(hostPort, path: "/metrics")))
    }

    /// `flowkit_rejected_total` by `reason` label.
    package var rejected: [String: Int] { byLabel("flowkit_rejected_total", "reason") }
    package var refused: [String: Int] { byLabel("flowkit_refused_total", "reason") }

    package func value(_ name: String) -> Double? { samples[name] }

    package func byLabel(_ name: String, _ label: String) -> [String: Int] {
        var result: [String: Int] = [:]
        let prefix = "\(name){"
        for (key, value) in samples where key.hasPrefix(prefix) {
            guard let range = key.range(of: "\(label)=\"") else { continue }
            let rest = key[range.upperBound...]
            guard let end = rest.firstIndex(of: "\"") else { continue }
            result[String(rest[..<end]), default: 0] += Int(value)
        }
        return result
    }

    /// The difference `after - before` for each label, leaving out zeros.
    package static func delta(_ after: [String: Int], _ before: [String: Int]) -> [String: Int] {
        var result: [String: Int] = [:]
        for (label, value) in after where value - before[label, default: 0] != 0 { result[label] = value - before[label, default: 0] }
        return result
    }

    package static func parse(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    /// A plain HTTP/1.1 GET over a blocking socket: enough for a metrics endpoint.
    package static func get(_ hostPort: String, path: String) throws -> String {
        guard let colon = hostPort.lastIndex(of: ":"), let port = UInt16(hostPort[hostPort.index(after: colon)...]) else {
            throw ChaosError("not host:port: \(hostPort)")
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChaosError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var timeout = timeval()
        timeout.tv_sec = 5
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(hostPort[..<colon]), &address.sin_addr) == 1 else { throw ChaosError("not an IPv4 address: \(hostPort)") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ChaosError("cannot connect to metrics at \(hostPort): \(String(cString: strerror(errno)))") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(hostPort)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response += buffer[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw ChaosError("no HTTP answer from \(hostPort)") }
        return String(text[split.upperBound...])
    }
}
