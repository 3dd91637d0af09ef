/// SHA-256 (FIPS 180-4), streaming. Dependency-free, so every process computes state digests
/// identically without pulling a crypto library into the flow library.
///
/// Whole 64-byte blocks are compressed straight from the caller's bytes; only a block's tail waits
/// in the 64-byte buffer. The message schedule is a 16-word window on the stack.
@_spi(Benchmarks) public struct SHA256: Sendable {
    private var hash: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// A block's bytes that arrived without the rest of it.
    private var pending: Block = (0, 0, 0, 0, 0, 0, 0, 0)
    private var pendingCount = 0
    private var totalBytes: UInt64 = 0

    public init() {}

    /// Hashes `bytes` and returns the 32-byte digest.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var sha = SHA256()
        sha.update(bytes)
        return sha.finalize()
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update(bytesOf: $0) }
    }

    public mutating func update(_ bytes: String.UTF8View) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(bytesOf: UnsafeRawBufferPointer($0)) }
        if done == nil { update(Array(bytes)) }
    }

    public mutating func update(_ byte: UInt8) {
        withUnsafeBytes(of: byte) { update(bytesOf: $0) }
    }

    public mutating func update(bytesOf buffer: UnsafeRawBufferPointer) {
        guard var base = buffer.baseAddress, !buffer.isEmpty else { return }
        var remaining = buffer.count
        totalBytes &+= UInt64(remaining)
        if pendingCount > 0 {
            let taken = min(64 - pendingCount, remaining)
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.advanced(by: pendingCount).copyMemory(from: base, byteCount: taken) }
            pendingCount += taken
            base += taken
            remaining -= taken
            guard pendingCount == 64 else { return }
            let block = pending
            withUnsafeBytes(of: block) { compress($0.baseAddress!) }
            pendingCount = 0
        }
        while remaining >= 64 {
            compress(base)
            base += 64
            remaining -= 64
        }
        if remaining > 0 {
            withUnsafeMutableBytes(of: &pending) { $0.baseAddress!.copyMemory(from: base, byteCount: remaining) }
            pendingCount = remaining
        }
    }

    /// Pads, processes the last block and returns the 32-byte digest.
    public consuming func finalize() -> [UInt8] {
        let bitLength = totalBytes &* 8
        var padding = [UInt8](repeating: 0, count: pendingCount < 56 ? 56 - pendingCount : 120 - pendingCount)
        padding[0] = 0x80
        update(padding)
        withUnsafeBytes(of: bitLength.bigEndian) { update(bytesOf: $0) }
        return [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            for (index, word) in [hash.0, hash.1, hash.2, hash.3, hash.4, hash.5, hash.6, hash.7].enumerated() {
                withUnsafeBytes(of: word.bigEndian) { out.baseAddress!.advanced(by: index * 4).initialize(from: $0.bindMemory(to: UInt8.self).baseAddress!, count: 4) }
            }
            count = 32
        }
    }

    private typealias Block = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// One 64-byte block at `block`, which need not be aligned.
    private mutating func compress(_ block: UnsafeRawPointer) {
        var (a, b, c, d, e, f, g, h) = hash
        Self.k.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { w in
                for i in 0..<16 {
                    w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
                }
                for i in 0..<64 {
                    let word: UInt32
                    if i < 16 {
                        word = w[i]
                    } else {
                        let w15 = w[(i - 15) & 15]
                        let w2 = w[(i - 2) & 15]
                        let s0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 >> 3)
                        let s1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 >> 10)
                        word = w[i & 15] &+ s0 &+ w[(i - 7) & 15] &+ s1
                        w[i & 15] = word
                    }
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[i] &+ word
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ s0 &+ majority)
                }
            }
        }
        hash = (
            hash.0 &+ a, hash.1 &+ b, hash.2 &+ c, hash.3 &+ d,
            hash.4 &+ e, hash.5 &+ f, hash.6 &+ g, hash.7 &+ h
        )
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self >> count) | (self << (32 - count))
    }
}
