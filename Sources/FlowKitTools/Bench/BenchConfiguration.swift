import FlowKitCluster
import FlowKitExamples
import Foundation

/// What one `flowkit bench` run does: the load's shape and the cluster it runs against.
///
/// It is echoed in every result (`"config"`), so a JSON file says how it was made.
struct BenchConfiguration: Codable, Sendable {
    /// Offered load of this step, in events per second.
    var rate: Double
    /// Seconds measured, after the warm-up.
    var duration: Double
    /// Seconds of load before measuring starts.
    var warmup: Double
    var nodes: Int
    /// Coordinators: 1, or replicated ones (the leader commits once the in-sync standbys hold an
    /// entry). Absent in results older than the flag: 1.
    var coordinators: Int? = 1
    /// DEALER connections the load is spread over, round-robin over the nodes.
    var connections: Int
    /// `load/<prefix>-<k>` instances the events are spread over.
    var instances: Int
    /// With `--populate`: events per second that give every instance its state before the step
    /// (one event each), and the seconds the idle cluster is then watched; `nil`: instances are
    /// created by the step's own events.
    var populateRate: Double? = nil
    var idleSeconds: Double? = nil
    /// With `--populate --settle`: the idle cluster is watched only once the population's
    /// after-work is done (``BenchPopulation/settleRule``). Absent in older results: false.
    var settle: Bool? = nil
    /// With `--settle`: the CPU (% of a core) under which a process counts as quiet; nil: 2.
    var settleBelowPercent: Double? = nil
    /// Padding bytes per event.
    var eventSize: Int
    /// `tickWithEffect` instead of `tick`: each event starts an effect on its origin node.
    var effects: Bool
    /// How the bench encodes events: `binary` or `json`.
    var codec: String
    /// The coordinator's log mode: `synced` or `relaxed` (unknown when attached).
    var durability: String
    /// The cluster directory attached to, or `nil` for a cluster the bench started itself.
    var attach: String?
    /// How emits wait: the bench always uses `ordered` and times "applied" through WATCH.
    var wait: String = "ordered"
    /// How often the sender wakes the bench's loop on its own at most, in microseconds (it also
    /// sends whatever is due in the turns replies wake the loop for).
    var sendTick: Int = 200
    /// With `--trace`: one seq in this many is traced through every hop.
    var traceEvery: UInt64?

    /// The events of a step: the warm-up's and the measured window's.
    var totalEvents: Int { Int((rate * (warmup + duration)).rounded(.down)) }

    var payloadCodec: PayloadCodec { codec == "json" ? .json : .binary }

    /// The EMIT payload the bench sends, the same for every event.
    func payload() -> [UInt8] {
        let padding = [UInt8](repeating: 0x2A, count: eventSize)
        let event: LoadFlow.Event = effects ? .tickWithEffect(padding: padding) : .tick(padding: padding)
        switch payloadCodec {
        case .binary: return event.binaryEncoded()
        case .json: return Array((try? JSONEncoder().encode(event)) ?? Data())
        }
    }
}

/// The machine a run was measured on: the plot's title and BENCHMARKS.md quote it.
struct MachineInfo: Codable, Sendable {
    var host: String
    var cpus: Int
    var cpuModel: String
    var kernel: String
    var memoryBytes: UInt64
    /// When the run started, ISO 8601.
    var startedAt: String

    static func current() -> MachineInfo {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n")
            .first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let formatter = ISO8601DateFormatter()
        return MachineInfo(
            host: ProcessInfo.processInfo.hostName,
            cpus: ProcessInfo.processInfo.activeProcessorCount,
            cpuModel: model,
            kernel: "Linux " + release,
            memoryBytes: ProcessInfo.processInfo.physicalMemory,
            startedAt: formatter.string(from: Date())
        )
    }

    /// One line for titles: `AMD EPYC, 2 CPUs, Linux 6.1.0, 2025-01-01T10:00:00Z`.
    var summary: String { "\(cpuModel), \(cpus) CPUs, \(kernel), \(startedAt)" }
}
