import FlowKitProcesses
import Foundation
import Synchronization

/// Loopback TCP ports nothing listens on now, for children told their ports in advance (etcd, and
/// replicated coordinators, which know each other by endpoint before they start).
///
/// A port handed out here is bound later, by another socket or process. Ports are therefore drawn
/// from below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`), where no outgoing
/// connection and no wildcard bind (`tcp://127.0.0.1:*`) can take one in the meantime, and each is
/// handed out once per process.
package enum FreePorts {
    /// One free port.
    package static func one() throws -> Int { try run(1) }

    /// The first of `count` consecutive free ports.
    package static func run(_ count: Int) throws -> Int {
        let range = candidates
        for _ in 0..<200 {
            let base = Int.random(in: range.lowerBound...(range.upperBound - count))
            let ports = base..<(base + count)
            let taken = handedOut.withLock { handed in
                if ports.contains(where: handed.contains) || !ports.allSatisfy(isFree) { return true }
                handed.formUnion(ports)
                return false
            }
            if !taken { return base }
        }
        throw ChildProcessError("no run of \(count) free ports found in \(range.lowerBound)..<\(range.upperBound)")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    /// Below the ephemeral range (10000..<32768 with Linux's default of 32768-60999), else above it;
    /// the whole unprivileged range when the ephemeral range leaves no room on either side.
    private static let candidates: Range<Int> = {
        let bounds = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) } ?? []
        let (first, last) = bounds.count == 2 ? (bounds[0], bounds[1]) : (32_768, 60_999)
        if first >= 12_000 { return 10_000..<first }
        if last <= 63_000 { return (last + 1)..<65_536 }
        return 10_000..<65_536
    }()

    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
