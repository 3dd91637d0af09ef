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
/// An owner may also save *deltas* after a snapshot (``saveDelta(_:follows:)``): each only what
/// changed since the file it follows, `delta-<seq>.snap`, whose body begins with that file's seq.
/// ``latestChain()`` reads the newest snapshot that validates and the deltas that continue it;
/// the next snapshot saved deletes every delta. What a delta holds and how the owner merges it is
/// the owner's.
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
    private static let deltaMagic = "FKDELT01"
    private static let prefix = "snapshot-"
    private static let deltaPrefix = "delta-"
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
        for name in try fileSystem.listDirectory(directory)
        where (name.hasPrefix(Self.prefix) || name.hasPrefix(Self.deltaPrefix)) && name.hasSuffix(Self.suffix + ".tmp") {
            logger.notice("removing an interrupted snapshot write", metadata: ["flowkit.snapshot.file": "\(name)"])
            try fileSystem.remove(FileSystem.join(directory, name))
        }
    }

    /// Writes `snapshot` durably and atomically, then deletes all but the newest ``retain`` and
    /// every delta (each follows an older snapshot).
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
        let deltas = try deltaSeqs()
        for seq in deltas { try fileSystem.remove(deltaPath(seq: seq)) }
        if !stale.isEmpty || !deltas.isEmpty { try fileSystem.syncDirectory(directory) }
    }

    /// Writes a delta durably and atomically: what changed from the snapshot or delta at `follows`
    /// to `delta.seq`.
    /// - Parameters:
    ///   - delta: Its seq and bytes.
    ///   - follows: The seq of the file it follows: the newest snapshot's, or the last delta's.
    public func saveDelta(_ delta: Snapshot, follows: UInt64) throws {
        var body: [UInt8] = []
        body.reserveCapacity(8 + delta.bytes.count)
        body.appendBigEndian(follows)
        body.append(contentsOf: delta.bytes)
        try BlobFile.write(body, seq: delta.seq, magic: Self.deltaMagic, to: deltaPath(seq: delta.seq), directory: directory, fileSystem: fileSystem)
        logger.info(
            "saved snapshot delta",
            metadata: ["flowkit.snapshot.seq": "\(delta.seq)", "flowkit.snapshot.follows": "\(follows)", "flowkit.snapshot.bytes": "\(delta.bytes.count)"]
        )
    }

    /// The newest snapshot that validates (``latest()``) and the deltas that follow it unbroken,
    /// oldest first; nil if there is no snapshot.
    ///
    /// The chain ends at the first delta that is damaged or does not follow the file before it;
    /// that delta and every later one are deleted (with an error log line), so the next delta
    /// saved follows the chain's end, as do deltas older than the snapshot.
    /// - Returns: The snapshot and its deltas.
    public func latestChain() throws -> (snapshot: Snapshot, deltas: [Snapshot])? {
        let snapshot = try latest()
        var deltas: [Snapshot] = []
        var end = snapshot?.seq
        var broken = false
        var removed = false
        for seq in try deltaSeqs().reversed() {
            if !broken, let chainEnd = end, seq > chainEnd {
                do {
                    let (storedSeq, body) = try BlobFile.read(deltaPath(seq: seq), magic: Self.deltaMagic, fileSystem: fileSystem)
                    guard storedSeq == seq, body.count >= 8 else {
                        throw LogError(.corrupt, "delta file says seq \(storedSeq) but its name says \(seq)", path: deltaPath(seq: seq))
                    }
                    let follows = body.withUnsafeBytes { $0.loadBigEndian(UInt64.self, at: 0) }
                    if follows == chainEnd {
                        deltas.append(Snapshot(seq: seq, bytes: Array(body[8...])))
                        end = seq
                        continue
                    }
                    logger.error(
                        "a snapshot delta does not follow the one before it; the chain ends there",
                        metadata: ["flowkit.snapshot.seq": "\(seq)", "flowkit.snapshot.follows": "\(follows)", "flowkit.snapshot.chainEnd": "\(chainEnd)"]
                    )
                } catch let error as LogError where error.code == .corrupt {
                    logger.error(
                        "a snapshot delta is damaged; the chain ends at the one before it",
                        metadata: ["flowkit.snapshot.seq": "\(seq)", "flowkit.snapshot.error": "\(error)"]
                    )
                }
                broken = true
            }
            try fileSystem.remove(deltaPath(seq: seq))
            removed = true
        }
        if removed { try fileSystem.syncDirectory(directory) }
        return snapshot.map { ($0, deltas) }
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

    /// The seqs of the stored deltas, newest first (validity not checked).
    private func deltaSeqs() throws -> [UInt64] {
        try fileSystem.listDirectory(directory).compactMap { name -> UInt64? in
            guard name.hasPrefix(Self.deltaPrefix), name.hasSuffix(Self.suffix) else { return nil }
            return UInt64(name.dropFirst(Self.deltaPrefix.count).dropLast(Self.suffix.count))
        }
        .sorted(by: >)
    }

    private func path(seq: UInt64) -> String {
        FileSystem.join(directory, Self.prefix + Self.name(seq: seq) + Self.suffix)
    }

    private func deltaPath(seq: UInt64) -> String {
        FileSystem.join(directory, Self.deltaPrefix + Self.name(seq: seq) + Self.suffix)
    }

    private static func name(seq: UInt64) -> Substring {
        LogFormat.segmentName(firstSeq: seq).dropLast(LogFormat.segmentSuffix.count)
    }
}
