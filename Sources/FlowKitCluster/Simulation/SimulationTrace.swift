import Logging
import Synchronization

/// The last lines of a simulation's story: messages the machines logged, faults, syncs, restarts,
/// each at its simulated time. A failing seed prints them.
final class SimulationTrace: Sendable {
    private let lines: Mutex<(ring: [String], next: Int, total: Int)>
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        self.lines = Mutex(([], 0, 0))
    }

    func note(at micros: UInt64, _ line: @autoclosure () -> String) {
        let text = "[\(Self.format(micros))] \(line())"
        lines.withLock { state in
            if state.ring.count < capacity {
                state.ring.append(text)
            } else {
                state.ring[state.next] = text
            }
            state.next = (state.next + 1) % capacity
            state.total += 1
        }
    }

    /// The lines kept, oldest first.
    var recent: [String] {
        lines.withLock { state in
            state.ring.count < capacity ? state.ring : Array(state.ring[state.next...] + state.ring[..<state.next])
        }
    }

    /// Simulated time now, for the log handler; set by the simulation as it advances.
    let clock = Atomic<UInt64>(0)

    static func format(_ micros: UInt64) -> String {
        let seconds = micros / 1_000_000
        let fraction = String(micros % 1_000_000)
        return "\(seconds).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
    }
}

/// Sends what the simulated processes log to the simulation's trace, at notice and above (and
/// everything at debug when asked for).
struct SimulationLogHandler: LogHandler {
    let trace: SimulationTrace
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init(trace: SimulationTrace, label: String) {
        self.trace = trace
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let who = metadata["node"].map { "n\($0)" } ?? metadata["coordinator"].map { "c\($0)" } ?? "c"
        let details = (event.metadata ?? [:]).filter { $0.key != "node" && $0.key != "coordinator" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        trace.note(at: trace.clock.load(ordering: .relaxed), "\(who) \(event.level): \(event.message)" + (details.isEmpty ? "" : " " + details.joined(separator: " ")))
    }
}
