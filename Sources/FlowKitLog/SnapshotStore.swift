import Logging

/// A snapshot of replicated state: everything up to and including `seq`.
public struct Snapshot: Sendable, Hashable {
    /// The last log seq the snapshot includes.
    public var seq: UInt64
    /// The opaque encoded state.
    public var bytes: [UInt8]

    /// Creates a snapshot.
    /// - Parameters:
    ///   - seq: The last log seq the snapshot includes.
    ///   - bytes: The opaque encoded state.
    public init(seq: UInt64, bytes: [UInt8]) {
        self.seq = seq
        self.bytes = bytes
    }
}

/// Stores snapshot blobs atomically and keeps the newest few.
///
/// Each snapshot is one checksummed file, `snapshot-<seq>.snap` (format in `BlobFile.swift`),
/// written to a temporary file, synced and renamed into place. ``latest()`` returns the newest
/// snapshot that validates, so a damaged newest one falls back to the one before it.
/// A typical owner saves a snapshot at seq S, then calls ``SegmentLog/removePrefix(through:)``
/// with S.
///
/// Calls must not overlap: give the store one owner.
public struct SnapshotStore: Sendable {
    /// The directory holding the snapshot files.
    public let directory: String
    /// How many snapshots are kept; older ones are deleted after each save.
    public let retain: Int
    private let fileSystem: FileSystem
    private let logger: Logger
    private static let magic = "FKSNAP01"
    private static let prefix = "snapshot-"
    private static let suffix = ".snap"

    /// Opens the store, creating `directory` if it is missing and deleting interrupted writes.
    /// - Parameters:
    ///   - directory: Where snapshot files live.
    ///   - retain: How many snapshots to keep, at least 1; default 2.
    ///   - logger: Receives saves, pruning and damaged snapshots skipped.
    ///   - faultInjection: A hook for tests that makes chosen file operations fail.
    public init(directory: String, retain: Int = 2, logger: Logger, faultInjection: FaultInjection? = nil) throws {
        self.directory = directory
        self.retain = max(retain, 1)
        self.fileSystem = FileSystem(faults: faultInjection)
        self.logger = logger
        try fileSystem.makeDirectory(directory)
        for name in try fileSystem.listDirectory(directory) where name.hasPrefix(Self.prefix) && name.hasSuffix(Self.suffix + ".tmp") {
            logger.notice("removing an interrupted snapshot write", metadata: ["flowkit.snapshot.file": "\(name)"])
            try fileSystem.remove(FileSystem.join(directory, name))
        }
    }

    /// Writes `snapshot` durably and atomically, then deletes all but the newest ``retain``.
    ///
    /// A snapshot with the same seq is replaced. If writing fails (disk full), the temporary
    /// file is removed and existing snapshots are untouched.
    /// - Parameter snapshot: The snapshot to store.
    public func save(_ snapshot: Snapshot) throws {
        try BlobFile.write(
            snapshot.bytes,
            seq: snapshot.seq,
            magic: Self.magic,
            to: path(seq: snapshot.seq),
            directory: directory,
            fileSystem: fileSystem
        )
        logger.info("saved snapshot", metadata: ["flowkit.snapshot.seq": "\(snapshot.seq)", "flowkit.snapshot.bytes": "\(snapshot.bytes.count)"])
        let stale = try seqs().dropFirst(retain)
        for seq in stale { try fileSystem.remove(path(seq: seq)) }
        if !stale.isEmpty { try fileSystem.syncDirectory(directory) }
    }

    /// The newest snapshot that validates; nil if there is none.
    ///
    /// Damaged snapshots are skipped with an error log line (and left in place for inspection).
    /// - Returns: The newest valid snapshot.
    public func latest() throws -> Snapshot? {
        for seq in try seqs() {
            do {
                return try load(seq: seq)
            } catch let error as LogError where error.code == .corrupt {
                logger.error(
                    "skipping a damaged snapshot; falling back to an older one",
                    metadata: ["flowkit.snapshot.seq": "\(seq)", "flowkit.snapshot.error": "\(error)"]
                )
            }
        }
        return nil
    }

    /// Reads and validates the snapshot taken at `seq`.
    /// - Parameter seq: The snapshot's seq.
    /// - Returns: The snapshot.
    /// - Throws: ``LogError/Code/corrupt`` if it fails validation, ``LogError/Code/io`` if missing.
    public func load(seq: UInt64) throws -> Snapshot {
        let path = path(seq: seq)
        let (storedSeq, bytes) = try BlobFile.read(path, magic: Self.magic, fileSystem: fileSystem)
        guard storedSeq == seq else {
            throw LogError(.corrupt, "snapshot file says seq \(storedSeq) but its name says \(seq)", path: path)
        }
        return Snapshot(seq: seq, bytes: bytes)
    }

    /// The seqs of the stored snapshots, newest first (validity not checked).
    /// - Returns: Snapshot seqs in descending order.
    public func seqs() throws -> [UInt64] {
        try fileSystem.listDirectory(directory).compactMap { name -> UInt64? in
            guard name.hasPrefix(Self.prefix), name.hasSuffix(Self.suffix) else { return nil }
            return UInt64(name.dropFirst(Self.prefix.count).dropLast(Self.suffix.count))
        }
        .sorted(by: >)
    }

    private func path(seq: UInt64) -> String {
        let name = LogFormat.segmentName(firstSeq: seq).dropLast(LogFormat.segmentSuffix.count)
        return FileSystem.join(directory, Self.prefix + name + Self.suffix)
    }
}
