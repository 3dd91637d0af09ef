import Foundation
import Glibc

/// CPU time and memory of a process on this machine, read from `/proc/<pid>`.
struct ProcessStats: Sendable, Equatable {
    /// User + system time so far, in seconds (`utime` + `stime` of `/proc/<pid>/stat`).
    var cpuSeconds: Double
    /// VmRSS: resident memory now.
    var rssBytes: UInt64
    /// VmHWM: the most resident memory the process has had.
    var peakRSSBytes: UInt64
    /// Context switches of all its threads so far, voluntary (a thread slept: it waits for work)
    /// and not (the scheduler took the core): each is a wake-up.
    var contextSwitches: UInt64
    /// Threads now.
    var threads: Int

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The process's figures, or `nil` if it is not running here (or not readable).
    static func read(pid: Int32) -> ProcessStats? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        else { return nil }
        // The command name, in parentheses, may hold spaces: fields are counted after its ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        var switches: UInt64 = 0
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
            switches += count("voluntary_ctxt_switches:", in: status) + count("nonvoluntary_ctxt_switches:", in: status)
        }
        return ProcessStats(
            cpuSeconds: (user + system) / ticksPerSecond,
            rssBytes: kilobytes("VmRSS:", in: status),
            peakRSSBytes: kilobytes("VmHWM:", in: status),
            contextSwitches: switches,
            threads: tasks.count
        )
    }

    /// VmRSS alone: one file, where ``read(pid:)`` reads one per thread as well.
    static func residentBytes(pid: Int32) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return kilobytes("VmRSS:", in: status)
    }

    private static func count(_ key: String, in status: String) -> UInt64 {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
        return line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { UInt64($0) } ?? 0
    }

    private static func kilobytes(_ key: String, in status: String) -> UInt64 {
        count(key, in: status) * 1_024
    }
}

/// The processes a bench watches: the coordinator, each node, and the bench itself.
struct WatchedProcesses: Sendable {
    /// `coordinator`, `node-1`…, `bench`, with their pids.
    var pids: [(name: String, pid: Int32)]
    /// The cluster's processes' metrics endpoints (`host:port`), by name.
    var metrics: [String: String] = [:]

    /// Every process's figures now, by name (processes not readable here are left out).
    func sample() -> [String: ProcessStats] {
        var samples: [String: ProcessStats] = [:]
        for (name, pid) in pids {
            if let stats = ProcessStats.read(pid: pid) { samples[name] = stats }
        }
        return samples
    }

    /// Every process's resident memory now, by name: what the bench samples every second, while
    /// it measures (``sample()`` reads every thread's status too, a burst of work on a busy machine).
    func residentBytes() -> [String: UInt64] {
        var samples: [String: UInt64] = [:]
        for (name, pid) in pids {
            if let bytes = ProcessStats.residentBytes(pid: pid) { samples[name] = bytes }
        }
        return samples
    }

    /// What each cluster process's allocator holds for it now (`flowkit_malloc_allocated_bytes`
    /// from its metrics), by name: the live data, where an RSS also counts freed pages the
    /// allocator has not yet given back. Processes not on jemalloc, or not answering, are left out.
    func allocatedBytes() -> [String: UInt64] {
        var samples: [String: UInt64] = [:]
        for (name, endpoint) in metrics {
            if let bytes = try? MetricsScrape.fetch(endpoint).value("flowkit_malloc_allocated_bytes") { samples[name] = UInt64(bytes) }
        }
        return samples
    }

    func pid(of name: String) -> Int32? { pids.first { $0.name == name }?.pid }

    var nodeNames: [String] { pids.map(\.name).filter { $0.hasPrefix("node") } }
}
