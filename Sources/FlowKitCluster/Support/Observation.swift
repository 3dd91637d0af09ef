import CoreMetrics
import Logging

/// What a machine says of itself as it decides: log lines, counts and gauges, and hop-trace notes.
/// They change nothing it decides, and no machine carries them out: it collects them
/// (``Observations``), and its interpreter hands them to the process's logger, metrics and hop
/// trace, or to the simulation's trace.
enum Observation {
    case log(Logger.Level, Logger.Message, Logger.Metadata)
    case count(KeyPath<ClusterCounters, CounterCell>, Int)
    /// Submissions refused (the wall, room, the log), by reason.
    case refused(ProtocolError.Code, Int)
    /// A message refused at the door.
    case rejected(ProtocolError.Code)
    case gauge(KeyPath<ClusterGauges, Gauge>, Double)
    /// How far behind the leader a standby coordinator's copy is.
    case standbyLag(coordinator: String, entries: UInt64)
    /// A sampled entry reached a hop (``HopTrace``).
    case hop(seq: UInt64, HopTrace.Stage, at: UInt64)
    /// The hop trace's sampled records go to its file.
    case flushTrace
}

/// A machine's observations since its interpreter last took them.
struct Observations {
    private var pending: [Observation] = []

    mutating func log(_ level: Logger.Level, _ message: Logger.Message, _ metadata: Logger.Metadata = [:]) {
        pending.append(.log(level, message, metadata))
    }

    mutating func count(_ counter: KeyPath<ClusterCounters, CounterCell>, _ amount: Int = 1) {
        guard amount != 0 else { return }
        pending.append(.count(counter, amount))
    }

    mutating func refused(_ code: ProtocolError.Code, _ amount: Int = 1) {
        guard amount != 0 else { return }
        pending.append(.refused(code, amount))
    }

    mutating func rejected(_ code: ProtocolError.Code) {
        pending.append(.rejected(code))
    }

    mutating func gauge(_ gauge: KeyPath<ClusterGauges, Gauge>, _ value: Double) {
        pending.append(.gauge(gauge, value))
    }

    mutating func standbyLag(_ coordinator: String, _ entries: UInt64) {
        pending.append(.standbyLag(coordinator: coordinator, entries: entries))
    }

    mutating func hop(_ seq: UInt64, _ stage: HopTrace.Stage, at time: UInt64) {
        pending.append(.hop(seq: seq, stage, at: time))
    }

    mutating func flushTrace() {
        pending.append(.flushTrace)
    }

    /// What was observed since the last call.
    mutating func take() -> [Observation] {
        guard !pending.isEmpty else { return [] }
        // Handed over whole: an input that observes nothing allocates nothing.
        let taken = pending
        pending = []
        return taken
    }

    var isEmpty: Bool { pending.isEmpty }
}

/// Where a process's observations go: its logger, its counters (and through them its metrics), its
/// hop trace.
struct ObservationSink {
    let logger: Logger
    let counters: ClusterCounters
    let trace: HopTrace?

    func deliver(_ observations: [Observation]) {
        for observation in observations {
            switch observation {
            case .log(let level, let message, let metadata):
                logger.log(level: level, message, metadata: metadata)
            case .count(let counter, let amount):
                counters[keyPath: counter].add(amount)
            case .refused(let code, let amount):
                counters.count(refused: code, by: amount)
            case .rejected(let code):
                counters.count(rejected: code)
            case .gauge(let gauge, let value):
                counters.gauges[keyPath: gauge].record(value)
            case .standbyLag(let coordinator, let entries):
                Gauge(label: "flowkit_replication_lag_entries", dimensions: [("coordinator", coordinator)]).record(Double(entries))
            case .hop(let seq, let stage, let time):
                trace?.note(seq, stage, at: time)
            case .flushTrace:
                trace?.flush()
            }
        }
    }
}
