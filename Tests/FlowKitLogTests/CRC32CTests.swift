import FlowKitCluster
import FlowKitLog
import FlowKitTools
import Testing

@Suite("CRC-32C")
struct CRC32CTests {
    /// RFC 3720 (iSCSI) appendix B.4 vectors and the classic check value.
    static let vectors: [([UInt8], UInt32)] = [
        (Array("123456789".utf8), 0xE306_9283),
        ([UInt8](repeating: 0, count: 32), 0x8A91_36AA),
        ([UInt8](repeating: 0xFF, count: 32), 0x62A8_AB43),
        ((0..<32).map { UInt8($0) }, 0x46DD_794E),
        ((0..<32).reversed().map { UInt8($0) }, 0x113F_DB5C),
        ([], 0),
        (Array("a".utf8), 0xC1D0_4330),
    ]

    @Test(arguments: vectors)
    func knownVectors(input: [UInt8], expected: UInt32) {
        #expect(CRC32C.checksum(input) == expected)
    }

    @Test func continuingEqualsOneShot() {
        var generator = SeededRandom(seed: 7)
        let bytes = (0..<10_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let whole = CRC32C.checksum(bytes)
        for split in [0, 1, 7, 8, 9, 63, 4_999, 9_999, 10_000] {
            let first = CRC32C.checksum(bytes[..<split])
            #expect(CRC32C.checksum(bytes[split...], continuing: first) == whole, "split at \(split)")
        }
    }

    @Test func unalignedStartsAgree() {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 13) }
        for start in 0..<8 {
            let slice = Array(bytes[start...])
            let viaSlice = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            #expect(viaSlice == CRC32C.checksum(slice))
        }
    }
}
