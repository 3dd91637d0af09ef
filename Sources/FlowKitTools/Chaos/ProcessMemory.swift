import Foundation

/// Resident memory of processes, read from `/proc/<pid>/status`, and the lowest, highest and
/// latest value seen for each: how "memory stays bounded" is checked.
struct ProcessMemory: Sendable, Codable {
    /// One process's samples, in bytes.
    struct Samples: Sendable, Codable {
        var first: Int
        var peak: Int
        var last: Int
        var count: Int

        /// How far the peak rose above the first sample.
        var growth: Int { peak - first }
    }

    private(set) var processes: [String: Samples] = [:]

    /// Records the current RSS of every named process that is running.
    mutating func sample(_ pids: [String: Int32]) {
        for (name, pid) in pids {
            guard let rss = Self.residentBytes(pid) else { continue }
            if var samples = processes[name] {
                samples.peak = max(samples.peak, rss)
                samples.last = rss
                samples.count += 1
                processes[name] = samples
            } else {
                processes[name] = Samples(first: rss, peak: rss, last: rss, count: 1)
            }
        }
    }

    /// Starts again from the current values: the baseline after a warm-up.
    mutating func reset() {
        processes = [:]
    }

    /// `VmRSS` of `pid` in bytes, or `nil` if it is gone.
    static func residentBytes(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
            return kilobytes.map { $0 * 1_024 }
        }
        return nil
    }

    /// The processes whose peak rose more than `limit` bytes above their first sample.
    func exceeding(growth limit: Int) -> [String] {
        processes.filter { $0.value.growth > limit }.keys.sorted()
    }

    /// CPU seconds (user and system) `pid` has used so far, from `/proc/<pid>/stat`, or `nil`
    /// if it is gone.
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = text.lastIndex(of: ")")
        else { return nil }
        // After the command name in parentheses: state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func mebibytes(_ bytes: Int) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
