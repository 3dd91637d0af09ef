#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Makes one ``SegmentLog`` the only user of its directory, across processes and within one.
///
/// Other processes are kept out by a POSIX record lock (`fcntl(F_SETLK)`) on the directory's
/// `LOCK` file. Unlike `flock`, a record lock belongs to the process and is not inherited by
/// children, so a process that spawns others (even while it reopens a log) never finds its own
/// lock held by a half-started child. Record locks do not exclude the owning process, so an
/// in-process table does that (the scheme LevelDB uses). The kernel drops the lock when the
/// process dies, `kill -9` included.
final class DirectoryLock {
    private static let held = Mutex<Set<String>>([])
    private let key: String
    private var fd: Int32 = -1

    init(directory: String) throws {
        let path = FileSystem.join(directory, "LOCK")
        let key = DirectoryLock.canonical(directory)
        self.key = key
        let inserted = Self.held.withLock { $0.insert(key).inserted }
        guard inserted else { throw DirectoryLock.lockedError(directory, path) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            Self.held.withLock { _ = $0.remove(key) }
            throw LogError.system("opening the lock file", path: path, errno: code)
        }
        fd = descriptor
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_SETLK, &request) == 0 else {
            let code = errno
            release()
            if code == EAGAIN || code == EACCES { throw DirectoryLock.lockedError(directory, path) }
            throw LogError.system("locking", path: path, errno: code)
        }
    }

    /// Releases the lock; safe to call more than once.
    func release() {
        guard fd >= 0 else { return }
        closeDescriptor(fd)  // drops the record lock
        fd = -1
        Self.held.withLock { _ = $0.remove(key) }
    }

    deinit {
        release()
    }

    private static func lockedError(_ directory: String, _ path: String) -> LogError {
        LogError(.locked, "another SegmentLog (in this or another process) has \(directory) open; stop it first", path: path)
    }

    private static func canonical(_ directory: String) -> String {
        guard let resolved = realpath(directory, nil) else { return directory }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
