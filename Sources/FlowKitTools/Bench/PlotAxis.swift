import Foundation

/// One axis of ``LatencyPlot``: maps values to a length, linear or by decades, with its ticks.
struct Axis {
    struct Tick {
        var value: Double
        /// Decades on a log axis (labelled); 2× and 5× between them are minor.
        var major: Bool
    }

    let logarithmic: Bool
    let low: Double
    let high: Double
    let length: Double

    /// An axis wide enough for `values`: whole decades when logarithmic, else from 0 to a round
    /// number above the largest value.
    init(values: [Double], logarithmic: Bool, length: Double) {
        self.logarithmic = logarithmic
        self.length = length
        let smallest = values.min() ?? 1
        let largest = values.max() ?? 1
        if logarithmic {
            let low = pow(10, floor(log10(max(smallest, 1e-9))))
            var high = pow(10, ceil(log10(max(largest, 1e-9))))
            if high <= low { high = low * 10 }
            self.low = low
            self.high = high
        } else {
            low = 0
            let step = Self.niceStep(max(largest, 1) * 1.05 / 5)
            high = (max(largest, 1) * 1.05 / step).rounded(.up) * step
        }
    }

    /// Distance of `value` from the axis's origin.
    func position(_ value: Double) -> Double {
        if logarithmic {
            let clamped = min(max(value, low), high)
            return (log10(clamped) - log10(low)) / (log10(high) - log10(low)) * length
        }
        return (value - low) / (high - low) * length
    }

    var ticks: [Tick] {
        if logarithmic {
            var ticks: [Tick] = []
            var decade = low
            while decade <= high * 1.000_001 {
                ticks.append(Tick(value: decade, major: true))
                for factor in [2.0, 5.0] where decade * factor < high { ticks.append(Tick(value: decade * factor, major: false)) }
                decade *= 10
            }
            return ticks
        }
        let step = Self.niceStep((high - low) / 5)
        return stride(from: low, through: high + step / 1_000, by: step).map { Tick(value: $0, major: true) }
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        let magnitude = pow(10, floor(log10(max(raw, 1e-9))))
        for factor in [1.0, 2.0, 5.0, 10.0] where factor * magnitude >= raw { return factor * magnitude }
        return 10 * magnitude
    }
}
