#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging

/// Durably stores a few named values across restarts, such as the coordinator's epoch.
///
/// The values live in one checksummed file (`meta`, format in `BlobFile.swift`), replaced
/// atomically by write-to-temp, `fsync`, `rename`, `fsync(directory)`: after a crash it holds
/// either the old values or the new ones. A damaged file is an error, never silently reset,
/// because a reset epoch would let an old coordinator term look current.
///
/// Calls must not overlap: give the store one owner.
public struct MetaStore: Sendable {
    /// The directory holding the `meta` file.
    public let directory: String
    private let fileSystem: FileSystem
    private let logger: Logger
    private static let magic = "FKMETA01"

    /// Opens the store, creating `directory` if it is missing.
    /// - Parameters:
    ///   - directory: Where the `meta` file lives; may be shared with a ``SnapshotStore``.
    ///   - logger: Receives a line for every value change.
    ///   - faultInjection: A hook for tests that makes chosen file operations fail.
    public init(directory: String, logger: Logger, faultInjection: FaultInjection? = nil) throws {
        self.directory = directory
        self.fileSystem = FileSystem(faults: faultInjection)
        self.logger = logger
        try fileSystem.makeDirectory(directory)
    }

    private var path: String { FileSystem.join(directory, "meta") }

    /// Reads every value; empty if nothing was ever stored.
    /// - Returns: The stored values.
    /// - Throws: ``LogError/Code/corrupt`` if the file fails validation.
    public func load() throws -> [String: String] {
        let body: [UInt8]
        do {
            body = try BlobFile.read(path, magic: Self.magic, fileSystem: fileSystem).body
        } catch let error as LogError where error.errno == ENOENT {
            return [:]
        }
        return try Self.decode(body, path: path)
    }

    /// Replaces every value, durably.
    /// - Parameter values: The complete new set of values.
    public func store(_ values: [String: String]) throws {
        try BlobFile.write(Self.encode(values), seq: 0, magic: Self.magic, to: path, directory: directory, fileSystem: fileSystem)
    }

    /// Increments the integer under `key` (missing counts as 0) and stores it before returning.
    ///
    /// A coordinator calls this once per start to begin a new epoch.
    /// - Parameter key: The value's name; `"epoch"` by default.
    /// - Returns: The new value.
    @discardableResult
    public func increment(_ key: String = "epoch") throws -> UInt64 {
        var values = try load()
        var current: UInt64 = 0
        if let text = values[key] {
            guard let value = UInt64(text) else {
                throw LogError(.corrupt, "meta value \(key)=\(text) is not an unsigned integer", path: path)
            }
            current = value
        }
        values[key] = String(current + 1)
        try store(values)
        logger.info("stored meta value", metadata: ["flowkit.meta.key": "\(key)", "flowkit.meta.value": "\(current + 1)"])
        return current + 1
    }

    static func encode(_ values: [String: String]) -> [UInt8] {
        var body: [UInt8] = []
        body.appendBigEndian(UInt32(values.count))
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            for text in [key, value] {
                body.appendBigEndian(UInt32(text.utf8.count))
                body.append(contentsOf: text.utf8)
            }
        }
        return body
    }

    static func decode(_ body: [UInt8], path: String) throws -> [String: String] {
        var offset = 0
        func take(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, body.count - offset >= count else {
                throw LogError(.corrupt, "meta file body is truncated at byte \(offset)", path: path)
            }
            defer { offset += count }
            return body[offset..<(offset + count)]
        }
        func takeCount() throws -> Int {
            Int(try take(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        var values: [String: String] = [:]
        for _ in 0..<(try takeCount()) {
            let key = String(decoding: try take(try takeCount()), as: UTF8.self)
            values[key] = String(decoding: try take(try takeCount()), as: UTF8.self)
        }
        return values
    }
}
