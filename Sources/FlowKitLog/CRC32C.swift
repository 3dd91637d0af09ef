/// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected 0x82F63B78), as used by iSCSI, ext4,
/// Btrfs and Kafka record batches.
///
/// Software slicing-by-8: eight 256-entry tables let the loop consume 8 bytes per step.
/// `checksum("123456789") == 0xE3069283`.
public enum CRC32C {
    /// The checksum of `bytes`, optionally continuing a previous checksum.
    ///
    /// `checksum(b, continuing: checksum(a)) == checksum(a + b)`.
    /// - Parameters:
    ///   - bytes: The data.
    ///   - crc: The checksum of the data before `bytes`; `0` to start.
    /// - Returns: The CRC-32C of the data so far.
    @inlinable
    public static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return update(~crc, base, bytes.count) ^ 0xFFFF_FFFF
    }

    /// The checksum of `bytes`, optionally continuing a previous checksum.
    /// - Parameters:
    ///   - bytes: The data.
    ///   - crc: The checksum of the data before `bytes`; `0` to start.
    /// - Returns: The CRC-32C of the data so far.
    @inlinable
    public static func checksum(_ bytes: some Sequence<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        if let result = bytes.withContiguousStorageIfAvailable({ checksum(UnsafeRawBufferPointer($0), continuing: crc) }) {
            return result
        }
        return Array(bytes).withUnsafeBytes { checksum($0, continuing: crc) }
    }

    @usableFromInline
    static func update(_ initial: UInt32, _ start: UnsafeRawPointer, _ count: Int) -> UInt32 {
        crc32cTables.withUnsafeBufferPointer { table in
            var crc = initial
            var pointer = start
            var remaining = count
            while remaining >= 8 {
                let word = UInt64(littleEndian: pointer.loadUnaligned(as: UInt64.self)) ^ UInt64(crc)
                crc = table[0x700 | Int(word & 0xFF)]
                    ^ table[0x600 | Int((word >> 8) & 0xFF)]
                    ^ table[0x500 | Int((word >> 16) & 0xFF)]
                    ^ table[0x400 | Int((word >> 24) & 0xFF)]
                    ^ table[0x300 | Int((word >> 32) & 0xFF)]
                    ^ table[0x200 | Int((word >> 40) & 0xFF)]
                    ^ table[0x100 | Int((word >> 48) & 0xFF)]
                    ^ table[Int(word >> 56)]
                pointer += 8
                remaining -= 8
            }
            while remaining > 0 {
                let byte = pointer.load(as: UInt8.self)
                crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8)
                pointer += 1
                remaining -= 1
            }
            return crc
        }
    }
}

/// Table `k` (at `k * 256`) holds the CRC of a byte followed by `k` zero bytes.
@usableFromInline
let crc32cTables: [UInt32] = {
    var tables = [UInt32](repeating: 0, count: 8 * 256)
    for byte in 0..<256 {
        var crc = UInt32(byte)
        for _ in 0..<8 {
            crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1
        }
        tables[byte] = crc
    }
    for byte in 0..<256 {
        var crc = tables[byte]
        for slice in 1..<8 {
            crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
            tables[slice * 256 + byte] = crc
        }
    }
    return tables
}()
