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

/// Positions of `count` texts in the order of their UTF-8 bytes (``Swift/String/utf8Precedes(_:)``),
/// sorted without touching a string: each text's bytes are copied once into one buffer, and the
/// sort compares plain values, an 8-byte big-endian prefix first, then `memcmp` of the rest.
/// Sorting positions by comparing the strings themselves retained and released both at each of
/// the twenty million comparisons a million take: in a node's snapshot of a million instances,
/// the sort was a third of the CPU (perf), most of it `swift_retain`.
///
/// - Parameter text: The text at a position, asked once for each.
package func utf8Order(count: Int, _ text: (Int) -> String) -> [Int] {
    utf8Order(count: count) { position, bytes in bytes.append(contentsOf: text(position).utf8) }
}

/// Positions of `count` texts in the order of their bytes, each text given by appending its bytes
/// to a buffer (`append`, asked once for each position, in order): a snapshot's records at rest
/// hand over their addresses' bytes as they lie, with no string made of them.
///
/// The bytes every text begins with are left out of the comparison: a flow's instances share its
/// name and more (`load/<run>-`), and with a prefix taken from there every comparison of a
/// million of them fell through to `memcmp`.
///
/// The sort goes in steps that each take a moment, `check` called between them (every 4,096
/// texts, as a snapshot's encoding checks): runs of 4,096 sorted, then merged pairwise, a run
/// twice as long at each pass. A million sorted in one call was one burst of ~100 ms of a core,
/// which a snapshot's duty cycle could not spread (``SnapshotDutyCycle``) and a `check` could not
/// abandon.
package func utf8Order(
    count: Int, checking check: () throws -> Void, appending append: (Int, inout [UInt8]) -> Void
) rethrows -> [Int] {
    var bytes: [UInt8] = []
    var starts: [Int] = []
    starts.reserveCapacity(count + 1)
    for position in 0..<count {
        if position & (UTF8OrderKey.step - 1) == 0 { try check() }
        starts.append(bytes.count)
        append(position, &bytes)
    }
    starts.append(bytes.count)
    return try bytes.withUnsafeBufferPointer { buffer in
        // The first text starts at 0: how many of its bytes every other text starts with.
        var shared = count > 0 ? starts[1] : 0
        for position in 1..<max(count, 1) where shared > 0 {
            let start = starts[position]
            shared = min(shared, starts[position + 1] - start)
            var same = 0
            while same < shared, buffer[start + same] == buffer[same] { same += 1 }
            shared = same
        }
        var keys: [UTF8OrderKey] = []
        keys.reserveCapacity(count)
        for position in 0..<count {
            let (start, end) = (starts[position] + shared, starts[position + 1])
            var prefix: UInt64 = 0
            for index in 0..<8 { prefix = prefix << 8 | UInt64(start + index < end ? buffer[start + index] : 0) }
            keys.append(UTF8OrderKey(prefix: prefix, start: start, length: end - start, position: position))
        }
        try check()
        let base = buffer.baseAddress
        return try UTF8OrderKey.sorted(keys, checking: check) { lhs, rhs in
            // Texts shorter than 8 bytes are padded with zero bytes, which sort first, as a prefix does.
            if lhs.prefix != rhs.prefix { return lhs.prefix < rhs.prefix }
            if lhs.length <= 8 || rhs.length <= 8 { return lhs.length < rhs.length }
            let common = min(lhs.length, rhs.length) - 8
            let order = memcmp(base! + lhs.start + 8, base! + rhs.start + 8, common)
            return order == 0 ? lhs.length < rhs.length : order < 0
        }.map(\.position)
    }
}

/// ``utf8Order(count:checking:appending:)`` in one go.
package func utf8Order(count: Int, appending append: (Int, inout [UInt8]) -> Void) -> [Int] {
    utf8Order(count: count, checking: {}, appending: append)
}

/// A text to sort by ``utf8Order(count:checking:appending:)``: its first 8 bytes after the shared
/// prefix, where the rest lies, and its position.
private struct UTF8OrderKey {
    var prefix: UInt64
    var start: Int
    var length: Int
    var position: Int

    /// How many texts go between two checks.
    static let step = 4_096

    /// `keys` sorted by `precedes` (no two equal): runs of ``step`` sorted, then merged pairwise,
    /// `check` called after each run and every ``step`` keys merged.
    static func sorted(
        _ keys: [UTF8OrderKey], checking check: () throws -> Void, by precedes: (UTF8OrderKey, UTF8OrderKey) -> Bool
    ) rethrows -> [UTF8OrderKey] {
        var source = keys
        let count = source.count
        try source.withUnsafeMutableBufferPointer { keys in
            for start in stride(from: 0, to: count, by: step) {
                keys[start..<min(start + step, count)].sort(by: precedes)
                try check()
            }
        }
        guard count > step else { return source }
        var target = source
        var width = step
        while width < count {
            try source.withUnsafeBufferPointer { from in
                try target.withUnsafeMutableBufferPointer { to in
                    var out = 0
                    for low in stride(from: 0, to: count, by: 2 * width) {
                        let (middle, high) = (min(low + width, count), min(low + 2 * width, count))
                        var (left, right) = (low, middle)
                        while left < middle || right < high {
                            if right == high || (left < middle && !precedes(from[right], from[left])) {
                                to[out] = from[left]
                                left += 1
                            } else {
                                to[out] = from[right]
                                right += 1
                            }
                            out += 1
                            if out & (step - 1) == 0 { try check() }
                        }
                    }
                }
            }
            swap(&source, &target)
            width *= 2
        }
        return source
    }
}
