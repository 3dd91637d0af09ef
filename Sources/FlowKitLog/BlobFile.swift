/// A small self-validating file, replaced atomically; the format of ``MetaStore`` and
/// ``SnapshotStore`` files.
///
/// ```text
/// offset size field
/// 0      8    magic        "FKMETA01" or "FKSNAP01"
/// 8      4    version      1
/// 12     4    reserved     0
/// 16     8    seq          snapshot seq (0 for meta)
/// 24     8    length       body byte count
/// 32     4    bodyCRC      CRC-32C of the body
/// 36     4    headerCRC    CRC-32C of bytes 0..<36
/// 40     n    body
/// ```
///
/// Written as `<name>.tmp` (a large body a piece at a time, each written out before the next),
/// synced, renamed over `<name>`, then the directory is synced: a reader sees the old file or the
/// new one, never a mix.
enum BlobFile {
    static let headerSize = 40
    /// A large body (a snapshot of a million instances is 60 MB) goes to the disk a piece of this
    /// many bytes at a time, each written out before the next (``FileSystem/writeOut(_:offset:length:)``):
    /// written whole and synced at the end, its 60 MB went out in one burst, and every sync of
    /// every other file on the disk waited behind it, the coordinator's log commits first (a
    /// second's p99 at 20,000 events a second rose to 0.2-0.3 s at each snapshot). A piece is a
    /// few milliseconds of the disk's time.
    static let writtenOutEvery = 1 << 20
    static let version: UInt32 = 1

    static func write(
        _ body: [UInt8],
        seq: UInt64,
        magic: String,
        to path: String,
        directory: String,
        fileSystem: FileSystem
    ) throws {
        var header = Array(magic.utf8)
        header.appendBigEndian(version)
        header.appendBigEndian(UInt32(0))
        header.appendBigEndian(seq)
        header.appendBigEndian(UInt64(body.count))
        header.appendBigEndian(CRC32C.checksum(body))
        header.appendBigEndian(CRC32C.checksum(header))

        let temporary = path + ".tmp"
        try fileSystem.remove(temporary)
        let fd = try fileSystem.openFile(temporary, create: true)
        do {
            try header.withUnsafeBytes { try fileSystem.write(fd, $0, at: 0, path: temporary) }
            try body.withUnsafeBytes { body in
                var written = 0
                while written < body.count {
                    let piece = min(writtenOutEvery, body.count - written)
                    try fileSystem.write(fd, UnsafeRawBufferPointer(rebasing: body[written..<(written + piece)]), at: headerSize + written, path: temporary)
                    fileSystem.writeOut(fd, offset: headerSize + written, length: piece)
                    written += piece
                }
            }
            try fileSystem.sync(fd, path: temporary)
            fileSystem.closeFile(fd)
        } catch {
            fileSystem.closeFile(fd)
            try? fileSystem.remove(temporary)
            throw error
        }
        do {
            try fileSystem.renameFile(temporary, to: path)
        } catch {
            try? fileSystem.remove(temporary)
            throw error
        }
        try fileSystem.syncDirectory(directory)
    }

    /// Reads and validates a file; returns its seq and body.
    static func read(_ path: String, magic: String, fileSystem: FileSystem) throws -> (seq: UInt64, body: [UInt8]) {
        let fd = try fileSystem.openFile(path, create: false)
        defer { fileSystem.closeFile(fd) }
        let bytes = try fileSystem.readAll(fd, path: path)
        func corrupt(_ reason: String) -> LogError {
            LogError(.corrupt, "\(reason); the file is damaged or was not written by FlowKit", path: path)
        }
        guard bytes.count >= headerSize else { throw corrupt("file is \(bytes.count) bytes, shorter than its \(headerSize)-byte header") }
        return try bytes.withUnsafeBytes { buffer in
            guard buffer.prefix(8).elementsEqual(magic.utf8) else { throw corrupt("bad magic (expected \(magic))") }
            let headerCRC = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<36]))
            guard headerCRC == buffer.loadBigEndian(UInt32.self, at: 36) else { throw corrupt("header checksum mismatch") }
            let version = buffer.loadBigEndian(UInt32.self, at: 8)
            guard version == Self.version else { throw corrupt("unsupported version \(version) (this build reads \(Self.version))") }
            let length = buffer.loadBigEndian(UInt64.self, at: 24)
            guard length == UInt64(bytes.count - headerSize) else {
                throw corrupt("header says \(length) body bytes but the file holds \(bytes.count - headerSize)")
            }
            let body = UnsafeRawBufferPointer(rebasing: buffer[headerSize...])
            guard CRC32C.checksum(body) == buffer.loadBigEndian(UInt32.self, at: 32) else { throw corrupt("body checksum mismatch") }
            return (buffer.loadBigEndian(UInt64.self, at: 16), Array(body))
        }
    }
}
