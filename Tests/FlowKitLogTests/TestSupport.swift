#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FlowKitLog
import Logging
import Synchronization

/// A unique directory under /tmp, removed with everything in it by ``remove()``.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init(_ label: String = "test") {
        var template = Array("/tmp/flowkit-log-\(label)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed: errno \(errno)")
        path = String(cString: created!)
    }

    /// A path inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    deinit { removeTree(path) }
}

/// `rm -rf path` (unmounts nothing: callers unmount first).
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if (info.st_mode & S_IFMT) == S_IFDIR {
        if let dir = opendir(path) {
            var names: [String] = []
            while let entry = readdir(dir) {
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
                }
                if name != "." && name != ".." { names.append(name) }
            }
            closedir(dir)
            for name in names { removeTree(path + "/" + name) }
        }
        rmdir(path)
    } else {
        unlink(path)
    }
}

/// Captured log lines, for asserting what the library reported.
final class LogCapture: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: Logger.Metadata
    }

    private let storage = Mutex<[Entry]>([])

    var entries: [Entry] { storage.withLock { $0 } }

    func append(_ entry: Entry) { storage.withLock { $0.append(entry) } }

    /// A logger whose lines land here.
    var logger: Logger {
        Logger(label: "flowkit.log.test") { _ in CapturingHandler(capture: self) }
    }

    func contains(_ level: Logger.Level, _ fragment: String) -> Bool {
        entries.contains { $0.level == level && $0.message.contains(fragment) }
    }
}

struct CapturingHandler: LogHandler {
    let capture: LogCapture
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        capture.append(.init(level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
    }
}

/// A deterministic payload for `seq`, so any reader can check what it got.
func payload(for seq: UInt64, size: Int? = nil) -> [UInt8] {
    let count = size ?? Int(seq % 97)
    return (0..<count).map { UInt8(truncatingIfNeeded: seq &* 31 &+ UInt64($0) &* 7) }
}

func records(_ seqs: ClosedRange<UInt64>, size: Int? = nil) -> [LogRecord] {
    seqs.map { LogRecord(seq: $0, payload: payload(for: $0, size: size)) }
}

let quietLogger = Logger(label: "flowkit.log.test") { _ in SwiftLogNoOpLogHandler() }

/// The names of the segment files in `directory`, sorted.
func segmentFiles(in directory: String) -> [String] {
    guard let dir = opendir(directory) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafePointer(to: &entry.pointee.d_name) {
            String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
        }
        if name.hasSuffix(".seg") { names.append(name) }
    }
    return names.sorted()
}

func fileSize(_ path: String) -> Int {
    var info = stat()
    return stat(path, &info) == 0 ? Int(info.st_size) : -1
}

func truncateFile(_ path: String, to size: Int) {
    precondition(truncate(path, off_t(size)) == 0, "truncate \(path) failed: errno \(errno)")
}

func appendBytes(_ bytes: [UInt8], to path: String) {
    let fd = open(path, O_WRONLY | O_APPEND)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// Flips one bit of the byte at `offset`.
func flipBit(in path: String, at offset: Int, bit: UInt8 = 0) {
    let fd = open(path, O_RDWR)
    precondition(fd >= 0)
    var byte: UInt8 = 0
    _ = pread(fd, &byte, 1, off_t(offset))
    byte ^= 1 << bit
    _ = pwrite(fd, &byte, 1, off_t(offset))
    close(fd)
}

/// Reads every committed record, in pages.
func readAll(_ log: SegmentLog, from start: UInt64? = nil) throws -> [LogRecord] {
    guard var seq = start ?? log.firstSeq else { return [] }
    var result: [LogRecord] = []
    while true {
        let page = try log.read(from: seq, maxCount: 500, maxBytes: 1 << 20)
        guard let last = page.last else { return result }
        result += page
        seq = last.seq + 1
    }
}

func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    precondition(fd >= 0, "open \(path) failed")
    defer { close(fd) }
    var bytes = [UInt8](repeating: 0, count: max(fileSize(path), 0))
    let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
    precondition(count == bytes.count)
    return bytes
}

func writeFile(_ path: String, _ bytes: some Collection<UInt8>) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "create \(path) failed")
    defer { close(fd) }
    let written = Array(bytes).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(written == bytes.count)
}

func makeDirectory(_ path: String) {
    precondition(mkdir(path, 0o755) == 0 || errno == EEXIST)
}
