#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// Whether this text's UTF-8 bytes come before `other`'s, byte by byte (a prefix first): the
    /// order of digests' keys and of snapshots' instances. A `memcmp` of the contiguous bytes; the
    /// generic comparison of the two UTF-8 views took a seventh of the CPU of a coordinator's
    /// snapshot of a million instances in sorting alone.
    package func utf8Precedes(_ other: String) -> Bool {
        let compared = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs -> Bool in
                let common = min(lhs.count, rhs.count)
                let order = common == 0 ? 0 : memcmp(lhs.baseAddress!, rhs.baseAddress!, common)
                return order == 0 ? lhs.count < rhs.count : order < 0
            }
        }
        if let compared, let precedes = compared { return precedes }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }
}
