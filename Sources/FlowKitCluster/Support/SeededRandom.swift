/// A seeded random number generator (SplitMix64): the same seed replays the same choices of
/// faults, victims, pauses, fuzz mutations and simulated message delays.
package struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        state = seed
    }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A generator for one named stream of choices, independent of how many values other streams
    /// drew: adding a fuzz endpoint does not change the faults a seed picks.
    package func derived(_ name: String) -> SeededRandom {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01B3
        }
        return SeededRandom(seed: state ^ hash)
    }

    /// `count` random bytes.
    package mutating func bytes(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let word = next()
            for shift in stride(from: 0, to: 64, by: 8) where result.count < count {
                result.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return result
    }

    /// A random duration between `range.lowerBound` and `range.upperBound` seconds.
    package mutating func seconds(_ range: ClosedRange<Double>) -> Duration {
        .milliseconds(Int(Double.random(in: range, using: &self) * 1_000))
    }
}
