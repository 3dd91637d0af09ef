#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the POSIX calls the stores use: retries `EINTR`, completes short
/// reads and writes, turns failures into ``LogError`` and consults the ``FaultInjection`` hook.
struct FileSystem: Sendable {
    let faults: FaultInjection?

    private func fault(_ kind: FaultInjection.Operation.Kind, _ path: String) -> FaultInjection.Fault? {
        faults?.decide(.init(kind: kind, path: path))
    }

    func openFile(_ path: String, create: Bool) throws -> Int32 {
        if create, let fault = fault(.create, path) {
            throw LogError.system("creating the file", path: path, errno: fault.errno)
        }
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0)
        while true {
            let fd = open(path, flags, 0o644)
            if fd >= 0 { return fd }
            if errno != EINTR { throw LogError.system(create ? "creating the file" : "opening the file", path: path, errno: errno) }
        }
    }

    func closeFile(_ fd: Int32) {
        _ = close(fd)
    }

    /// Writes all of `bytes` at `offset`.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws {
        var bytes = bytes
        var offset = offset
        if let fault = fault(.write(byteCount: bytes.count), path) {
            let prefix = min(max(fault.bytesWritten, 0), bytes.count)
            if prefix > 0 { try write(fd, UnsafeRawBufferPointer(rebasing: bytes[..<prefix]), offset: offset, path: path) }
            throw LogError.system("writing", path: path, errno: fault.errno)
        }
        while !bytes.isEmpty {
            let written = pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
            if written < 0 {
                if errno == EINTR { continue }
                throw LogError.system("writing", path: path, errno: errno)
            }
            bytes = UnsafeRawBufferPointer(rebasing: bytes[written...])
            offset += written
        }
    }

    private func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int, path: String) throws {
        try FileSystem(faults: nil).write(fd, bytes, at: offset, path: path)
    }

    /// Reads up to `buffer.count` bytes at `offset`; fewer only at end of file.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int, path: String) throws -> Int {
        var total = 0
        while total < buffer.count {
            let count = pread(fd, buffer.baseAddress! + total, buffer.count - total, off_t(offset + total))
            if count < 0 {
                if errno == EINTR { continue }
                throw LogError.system("reading", path: path, errno: errno)
            }
            if count == 0 { break }
            total += count
        }
        return total
    }

    /// Reads a whole file.
    func readAll(_ fd: Int32, path: String) throws -> [UInt8] {
        let size = try self.size(fd, path: path)
        var result = [UInt8](repeating: 0, count: size)
        let count = try result.withUnsafeMutableBytes { try read(fd, into: $0, at: 0, path: path) }
        result.removeLast(size - count)
        return result
    }

    /// `fdatasync` on Linux (data plus the metadata needed to read it back), `F_FULLFSYNC` on Darwin.
    func sync(_ fd: Int32, path: String) throws {
        if let fault = fault(.sync, path) { throw LogError.system("syncing", path: path, errno: fault.errno) }
        while true {
            #if os(Linux)
            let result = fdatasync(fd)
            #else
            let result = fcntl(fd, F_FULLFSYNC)
            #endif
            if result == 0 { return }
            if errno != EINTR { throw LogError.system("syncing", path: path, errno: errno) }
        }
    }

    /// Starts writing a file's range to the disk and waits until it is written (Linux's
    /// `sync_file_range(2)`; elsewhere nothing): a large file written a piece at a time, each
    /// written out before the next, never leaves the disk a burst to flush that other files'
    /// syncs wait behind. Not a sync (metadata and the disk's cache are not flushed: ``sync(_:path:)``
    /// does that, and reports errors); a failure here is left for it to find.
    func writeOut(_ fd: Int32, offset: Int, length: Int) {
        #if os(Linux)
        guard let syncFileRange = Self.syncFileRange else { return }
        // SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
        while syncFileRange(fd, Int64(offset), Int64(length), 1 | 2 | 4) != 0, errno == EINTR {}
        #endif
    }

    #if os(Linux)
    /// `sync_file_range`, which Glibc's module does not export (its header declares it only with
    /// `_GNU_SOURCE`): looked up once in the C library.
    private static let syncFileRange: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
        guard let symbol = dlsym(nil, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
    }()
    #endif

    /// `fsync` on a directory, so created, renamed and removed entries survive power loss.
    func syncDirectory(_ path: String) throws {
        if let fault = fault(.sync, path) { throw LogError.system("syncing the directory", path: path, errno: fault.errno) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LogError.system("opening the directory", path: path, errno: errno) }
        defer { _ = close(fd) }
        while fsync(fd) != 0 {
            if errno != EINTR { throw LogError.system("syncing the directory", path: path, errno: errno) }
        }
    }

    /// Reserves `size` bytes for the file (`posix_fallocate`). Best effort: a file system that
    /// cannot (or a full disk) leaves the file as it was, and appends then grow it as usual.
    func preallocate(_ fd: Int32, size: Int, path: String) {
        guard fault(.write(byteCount: size), path) == nil else { return }
        #if os(Linux)
        _ = posix_fallocate(fd, 0, off_t(size))
        #endif
    }

    func truncate(_ fd: Int32, to size: Int, path: String) throws {
        if let fault = fault(.truncate, path) { throw LogError.system("truncating", path: path, errno: fault.errno) }
        while ftruncate(fd, off_t(size)) != 0 {
            if errno != EINTR { throw LogError.system("truncating", path: path, errno: errno) }
        }
    }

    func remove(_ path: String) throws {
        if let fault = fault(.remove, path) { throw LogError.system("removing", path: path, errno: fault.errno) }
        if unlink(path) != 0 && errno != ENOENT { throw LogError.system("removing", path: path, errno: errno) }
    }

    func renameFile(_ source: String, to destination: String) throws {
        if let fault = fault(.rename, destination) { throw LogError.system("renaming", path: destination, errno: fault.errno) }
        if rename(source, destination) != 0 { throw LogError.system("renaming \(source)", path: destination, errno: errno) }
    }

    func size(_ fd: Int32, path: String) throws -> Int {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw LogError.system("stat", path: path, errno: errno) }
        return Int(info.st_size)
    }

    /// Creates `path` and missing parents; returns whether anything was created.
    @discardableResult
    func makeDirectory(_ path: String) throws -> Bool {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw LogError(.invalidArgument, "\(path) exists and is not a directory", path: path)
            }
            return false
        }
        let parent = FileSystem.parent(of: path)
        if parent != path { try makeDirectory(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw LogError.system("creating the directory", path: path, errno: errno) }
        try syncDirectory(parent)
        return true
    }

    func listDirectory(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw LogError.system("listing the directory", path: path, errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

/// Closes a descriptor; for types whose own `close` method hides the global one.
func closeDescriptor(_ fd: Int32) {
    _ = close(fd)
}
