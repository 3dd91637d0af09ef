import CZeroMQ

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ZMQError {
    /// The symbolic name of an `errno` value as libzmq reports it ("EAGAIN", "ETERM", ...).
    /// - Parameter value: An `errno` value.
    /// - Returns: The C macro name, or `"errno <n>"` when the value is not one libzmq uses.
    public static func symbolicName(of value: Int32) -> String {
        if let name = zmqNames[value] { return name }
        if let name = systemNames[value] { return name }
        return "errno \(value)"
    }

    /// Errors that libzmq defines itself, offset from `ZMQ_HAUSNUMERO`.
    private static let zmqNames: [Int32: String] = [
        ZMQ_HAUSNUMERO + 51: "EFSM",
        ZMQ_HAUSNUMERO + 52: "ENOCOMPATPROTO",
        ZMQ_HAUSNUMERO + 53: "ETERM",
        ZMQ_HAUSNUMERO + 54: "EMTHREAD",
    ]

    /// The POSIX errors that libzmq calls can report.
    private static let systemNames: [Int32: String] = [
        EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", EBADF: "EBADF",
        EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT",
        EBUSY: "EBUSY", EEXIST: "EEXIST", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR",
        EINVAL: "EINVAL", EMFILE: "EMFILE", ENFILE: "ENFILE", ENOSPC: "ENOSPC",
        EPIPE: "EPIPE", ERANGE: "ERANGE", ENAMETOOLONG: "ENAMETOOLONG", ENOSYS: "ENOSYS",
        EPROTO: "EPROTO", EMSGSIZE: "EMSGSIZE", ENOTSOCK: "ENOTSOCK", ENOTSUP: "ENOTSUP",
        EPROTONOSUPPORT: "EPROTONOSUPPORT", EAFNOSUPPORT: "EAFNOSUPPORT",
        EADDRINUSE: "EADDRINUSE", EADDRNOTAVAIL: "EADDRNOTAVAIL", ENETDOWN: "ENETDOWN",
        ENETUNREACH: "ENETUNREACH", ENETRESET: "ENETRESET", ECONNABORTED: "ECONNABORTED",
        ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS", ENOTCONN: "ENOTCONN",
        ETIMEDOUT: "ETIMEDOUT", ECONNREFUSED: "ECONNREFUSED", EHOSTUNREACH: "EHOSTUNREACH",
        EINPROGRESS: "EINPROGRESS",
    ]

    /// A short, actionable hint for the errors people most often run into.
    static func hint(for value: Int32) -> String {
        switch value {
        case EAGAIN:
            return " (the high-water mark was reached or no message is ready)"
        case EHOSTUNREACH:
            return " (no connected peer has that routing id; ROUTER_MANDATORY is on)"
        case EADDRINUSE:
            return " (another socket is bound there; bind to port * to let the OS choose)"
        case EINVAL, EPROTONOSUPPORT:
            return " (check the endpoint syntax, e.g. tcp://127.0.0.1:5555, ipc:///tmp/x, inproc://name)"
        case ENODEV:
            return " (the interface or address in the endpoint does not exist on this host)"
        case ZMQ_HAUSNUMERO + 51:
            return " (REQ must alternate send/receive; REP must receive before it sends)"
        case ZMQ_HAUSNUMERO + 53:
            return " (the context is shutting down; close the socket)"
        default:
            return ""
        }
    }
}
