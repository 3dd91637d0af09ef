import Foundation

/// Numbers as the bench prints them for people: `12,345`, `812 µs`, `1.23 ms`, `41.2 MiB`.
enum BenchFormat {
    /// An integer with thousands separators.
    static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0, (digits.count - offset) % 3 == 0 { grouped.append(",") }
            grouped.append(character)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    static func rate(_ value: Double) -> String { count(Int(value.rounded())) }

    /// A latency in microseconds, in the unit that reads best.
    static func micros(_ value: UInt64) -> String {
        switch value {
        case ..<1_000: return "\(value) µs"
        case ..<10_000: return fixed(Double(value) / 1_000, 2) + " ms"
        case ..<1_000_000: return fixed(Double(value) / 1_000, 1) + " ms"
        default: return fixed(Double(value) / 1_000_000, 2) + " s"
        }
    }

    static func micros(_ value: Double) -> String { micros(UInt64(max(0, value.rounded()))) }

    static func bytes(_ value: UInt64) -> String { fixed(Double(value) / 1_048_576, 1) + " MiB" }

    /// A number with `digits` decimals.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// Pads `text` on the left to `width` characters.
    static func right(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }

    /// Pads `text` on the right to `width` characters.
    static func left(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}
