#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from ``SegmentLog``, ``MetaStore`` or ``SnapshotStore``.
///
/// Every error carries a ``Code`` to switch on, a message that says what to do about it, and,
/// for failed system calls, the `errno` value and the file involved.
public struct LogError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value to switch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case diskFull, io, corrupt, compacted, nonContiguous, invalidArgument, closed, locked, failed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file system is out of space or quota (`ENOSPC`, `EDQUOT`). Nothing committed was
        /// harmed and the uncommitted batch was rolled back: free space, then append and commit again.
        public static let diskFull = Code(.diskFull)
        /// A system call failed for another reason (`EIO`, `EACCES`, ...); see ``LogError/errno``.
        public static let io = Code(.io)
        /// A file's contents fail validation (bad magic, checksum, framing or sequence).
        public static let corrupt = Code(.corrupt)
        /// The requested seqs were removed by compaction; fall back to a snapshot.
        public static let compacted = Code(.compacted)
        /// Appended seqs do not continue the log.
        public static let nonContiguous = Code(.nonContiguous)
        /// A caller-supplied value is out of range.
        public static let invalidArgument = Code(.invalidArgument)
        /// The log was closed.
        public static let closed = Code(.closed)
        /// Another process (or another ``SegmentLog`` in this one) holds the directory's lock.
        public static let locked = Code(.locked)
        /// A rollback after an I/O error failed too; the in-memory state can no longer be trusted.
        /// Close the log and open it again: recovery rebuilds the state from disk.
        public static let failed = Code(.failed)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String
    /// The file or directory involved, if any.
    public var path: String?
    /// The `errno` of the failed system call, if any.
    public var errno: Int32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
    }

    /// The symbolic name of ``errno`` (`"ENOSPC"`), if there is one.
    public var errnoName: String? { errno.map(Self.name(ofErrno:)) }

    public var description: String {
        var text = "LogError(\(code)): \(message)"
        if let errno {
            text += " [\(Self.name(ofErrno: errno)): \(String(cString: strerror(errno)))]"
        }
        if let path { text += " (path: \(path))" }
        return text
    }

    /// Maps a failed system call to an error: `ENOSPC`/`EDQUOT` become ``Code/diskFull``.
    static func system(_ operation: String, path: String, errno: Int32) -> LogError {
        let isFull = errno == ENOSPC || errno == EDQUOT
        let advice = isFull ? "free disk space, then append and commit again" : "check the file system and permissions"
        return LogError(
            isFull ? .diskFull : .io,
            "\(operation) failed; \(advice)",
            path: path,
            errno: errno
        )
    }

    static func name(ofErrno value: Int32) -> String {
        switch value {
        case ENOSPC: "ENOSPC"
        case EDQUOT: "EDQUOT"
        case EIO: "EIO"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EEXIST: "EEXIST"
        case EROFS: "EROFS"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case EBADF: "EBADF"
        case EINVAL: "EINVAL"
        case EAGAIN: "EAGAIN"
        case EINTR: "EINTR"
        case ENOTDIR: "ENOTDIR"
        case EISDIR: "EISDIR"
        case EFBIG: "EFBIG"
        case ENOTEMPTY: "ENOTEMPTY"
        default: "errno \(value)"
        }
    }
}
