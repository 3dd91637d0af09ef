import FlowKitProcesses
import Foundation

/// Loopback TCP ports nothing listens on now, for children told their ports in advance (etcd, and
/// replicated coordinators, which know each other by endpoint before they start).
package enum FreePorts {
    /// A port the kernel chooses.
    package static func one() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = loopback(port: 0)
        guard bind(fd, &address) else { throw ChildProcessError("bind: \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The first of `count` consecutive free ports.
    package static func run(_ count: Int) throws -> Int {
        for _ in 0..<50 {
            let base = try one()
            guard base + count - 1 <= 65_535 else { continue }
            if (1..<count).allSatisfy({ isFree(base + $0) }) { return base }
        }
        throw ChildProcessError("no run of \(count) free ports found")
    }

    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return bind(fd, &address)
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return address
    }

    private static func bind(_ fd: Int32, _ address: inout sockaddr_in) -> Bool {
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Foundation.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
