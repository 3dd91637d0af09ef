import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A non-blocking TCP connection carrying one ``ZMTPSession``: reads feed the session, and the
/// session's outbound bytes are written straight to the kernel, on the caller's thread.
///
/// This is the whole I/O path of FlowKit's ZMTP engine: one `read` and one `write` per batch,
/// no second thread, no mailbox. The owner polls ``fileDescriptor`` (`POLLIN` always, `POLLOUT`
/// while ``ZMTPSession/hasOutbound``).
final class ZMTPStream {
    let fileDescriptor: Int32
    /// Identifies this connection's registration of ``fileDescriptor`` with the loop (``PollToken``).
    let pollToken = PollToken.next()
    var session: ZMTPSession
    /// Whether the peer closed its side (or the connection failed); the stream is then done.
    private(set) var isClosed = false
    private static let readSize = 64 * 1024
    private var scratch = [UInt8](repeating: 0, count: ZMTPStream.readSize)

    /// Adopts a connected (or connecting) socket; takes ownership of `fileDescriptor`.
    init(fileDescriptor: Int32, session: ZMTPSession) {
        self.fileDescriptor = fileDescriptor
        self.session = session
    }

    deinit { close() }

    /// Reads what the kernel holds for this connection into the session, up to `limit` reads.
    /// - Returns: The number of bytes read; the stream is closed when the peer has gone.
    /// - Throws: ``ZMQError`` when the connection failed (reset, refused).
    @discardableResult
    func readAvailable(limit: Int = 4) throws -> Int {
        var total = 0
        for _ in 0..<limit where !isClosed {
            let count = scratch.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                scratch.withUnsafeBytes { session.append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
                total += count
                if count < Self.readSize { break }
            } else if count == 0 {
                close()
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                break
            } else if errno != EINTR {
                let error = ZMQError(errno: errno, operation: "read(ZMTP connection)")
                close()
                throw error
            }
        }
        return total
    }

    /// Writes as much of the session's outbound bytes as the kernel takes.
    /// - Returns: Whether everything was written (else poll for `POLLOUT`).
    /// - Throws: ``ZMQError`` when the connection failed.
    @discardableResult
    func flush() throws -> Bool {
        var failure: Int32 = 0
        while session.hasOutbound, failure == 0, !isClosed {
            var wrote = 0
            session.withOutbound { bytes in
                let count = send(fileDescriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
                if count < 0 { failure = errno } else { wrote = count }
                return max(0, count)
            }
            if failure == EINTR { failure = 0 }
            if wrote == 0, failure == 0 { break }
        }
        if failure == EAGAIN || failure == EWOULDBLOCK { return false }
        if failure != 0 {
            close()
            throw ZMQError(errno: failure, operation: "send(ZMTP connection)")
        }
        return !session.hasOutbound
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fileDescriptor)
    }
}

/// The socket calls of the ZMTP engine: non-blocking TCP on IPv4 loopback or any address.
enum TCPSocket {
    /// A listening socket on `host:port` (port 0 lets the kernel choose), and its port.
    static func listen(host: String, port: UInt16, backlog: Int32 = 128) throws -> (fileDescriptor: Int32, port: UInt16) {
        let fd = try make("listen")
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var address = try socketAddress(host: host, port: port, operation: "listen")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
            let error = ZMQError(errno: errno, operation: "bind(\(host):\(port))")
            Glibc.close(fd)
            throw error
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Starts connecting to `host:port`; the socket is writable once connected (check
    /// ``pendingError(_:)`` then).
    static func connect(host: String, port: UInt16) throws -> Int32 {
        let fd = try make("connect")
        var address = try socketAddress(host: host, port: port, operation: "connect")
        if isLoopback(address) { withoutPacing(fd) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 || errno == EINPROGRESS else {
            let error = ZMQError(errno: errno, operation: "connect(\(host):\(port))")
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// A connection waiting on `listener`, made non-blocking with Nagle off; `nil` if none waits.
    static func accept(_ listener: Int32) throws -> Int32? {
        // Non-blocking and close-on-exec from the start: a child spawned between an accept and a
        // later fcntl would hold the connection open, and keep the loop's epoll registration alive.
        let fd = flowkit_accept_nonblocking(listener)
        guard fd >= 0 else {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { return nil }
            throw ZMQError(errno: errno, operation: "accept")
        }
        noDelay(fd)
        var peer = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        if named == 0, isLoopback(peer) { withoutPacing(fd) }
        return fd
    }

    /// The congestion control of a loopback connection: one that does not pace (`reno`, which
    /// every process may choose). A system whose default is BBR paces each connection's segments
    /// on a timer by the bandwidth it has measured, and a connection that carries small messages
    /// now and then measures little: on loopback, where nothing is lost and there is no queue to
    /// spare, that only holds messages back (measured in docs/PERFORMANCE.md, "Loopback connections do
    /// not pace"). Connections to other hosts keep the system's choice.
    static let loopbackCongestionControl = "reno"

    private static func withoutPacing(_ fd: Int32) {
        #if os(Linux)
        // Best effort: a system that refuses keeps its default, which is correct, only slower.
        _ = loopbackCongestionControl.withCString { name in
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_CONGESTION, name, socklen_t(strlen(name)))
        }
        #endif
    }

    private static func isLoopback(_ address: sockaddr_in) -> Bool {
        address.sin_family == sa_family_t(AF_INET) && UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127
    }

    /// The error of a finished non-blocking connect (0 when it succeeded).
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    private static func make(_ operation: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ZMQError(errno: errno, operation: "socket(\(operation))") }
        noDelay(fd)
        return fd
    }

    private static func noDelay(_ fd: Int32) {
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func socketAddress(host: String, port: UInt16, operation: String) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        let name = host == "*" ? "0.0.0.0" : host == "localhost" ? "127.0.0.1" : host
        guard inet_pton(AF_INET, name, &address.sin_addr) == 1 else {
            throw ZMQError(.invalidArgument, message: "'\(host)' is not an IPv4 address", operation: "\(operation)(\(host):\(port))")
        }
        return address
    }
}
