/// A test hook that makes chosen file operations fail as if the system call had failed.
///
/// Every write, sync, create, truncate, rename and remove done by ``SegmentLog``,
/// ``MetaStore`` and ``SnapshotStore`` asks the hook first. Returning a ``Fault`` makes the
/// operation fail with that `errno`; a write may first really write a prefix of its bytes, the
/// way a real `ENOSPC` leaves a partial write behind.
///
/// ```swift
/// let full = FaultInjection { operation in
///     if case .write = operation.kind { return .init(errno: ENOSPC, bytesWritten: 10) }
///     return nil
/// }
/// ```
public struct FaultInjection: Sendable {
    /// One file operation about to be carried out.
    public struct Operation: Sendable, CustomStringConvertible {
        /// The kind of operation.
        public enum Kind: Sendable, Equatable {
            /// Writing `byteCount` bytes.
            case write(byteCount: Int)
            /// `fdatasync`/`fsync` of a file or a directory.
            case sync
            /// Creating a file.
            case create
            /// `ftruncate`.
            case truncate
            /// `rename` onto this path.
            case rename
            /// `unlink`.
            case remove
        }

        /// The kind of operation.
        public var kind: Kind
        /// The file or directory it acts on.
        public var path: String

        public var description: String { "\(kind) \(path)" }
    }

    /// How an operation fails.
    public struct Fault: Sendable {
        /// The `errno` the operation reports, e.g. `ENOSPC` or `EIO`.
        public var errno: Int32
        /// For writes: how many bytes are really written before the failure.
        public var bytesWritten: Int

        /// Creates a fault.
        /// - Parameters:
        ///   - errno: The `errno` the operation reports.
        ///   - bytesWritten: For writes, the prefix really written before failing.
        public init(errno: Int32, bytesWritten: Int = 0) {
            self.errno = errno
            self.bytesWritten = bytesWritten
        }
    }

    /// Decides, per operation, whether it fails.
    public var decide: @Sendable (Operation) -> Fault?

    /// Creates a hook.
    /// - Parameter decide: Called before each operation; return a ``Fault`` to make it fail.
    public init(_ decide: @escaping @Sendable (Operation) -> Fault?) {
        self.decide = decide
    }
}
