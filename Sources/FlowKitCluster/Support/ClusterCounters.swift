import Synchronization

/// A counter that many threads bump without locks.
final class CounterCell: Sendable {
    private let value = Atomic<Int>(0)

    func add(_ amount: Int) { value.add(amount, ordering: .relaxed) }
    var load: Int { value.load(ordering: .relaxed) }
}

/// What a coordinator or node counts: exported as metrics and shown in status.
final class ClusterCounters: Sendable {
    let ordered = CounterCell()
    let applied = CounterCell()
    let duplicates = CounterCell()
    let acksDropped = CounterCell()
    let publishDropped = CounterCell()
    let divergences = CounterCell()
    let commits = CounterCell()
    let commitMicros = CounterCell()
    let effectsStarted = CounterCell()
    let effectFailures = CounterCell()
    let effectsLost = CounterCell()
    let gapsRepaired = CounterCell()
    /// Messages refused at the door, by reason.
    private let rejected: [ProtocolError.Code: CounterCell]
    /// Submissions refused (overloaded, log unavailable), by reason.
    private let refused: [ProtocolError.Code: CounterCell]
    /// The latest commit's duration and size, for metrics.
    private let lastCommit = Mutex<(entries: Int, micros: Int64)>((0, 0))

    init() {
        rejected = Dictionary(uniqueKeysWithValues: ProtocolError.Code.allCases.map { ($0, CounterCell()) })
        refused = Dictionary(uniqueKeysWithValues: ProtocolError.Code.allCases.map { ($0, CounterCell()) })
    }

    func count(rejected code: ProtocolError.Code) { rejected[code]!.add(1) }
    func count(refused code: ProtocolError.Code, by amount: Int = 1) { refused[code]!.add(amount) }

    func recordCommit(entries: Int, duration: Duration) {
        commits.add(1)
        let micros = duration.microseconds
        commitMicros.add(Int(micros))
        lastCommit.withLock { $0 = (entries, micros) }
    }

    /// Rejections so far, by reason label, only the non-zero ones.
    var rejections: [String: Int] {
        var result: [String: Int] = [:]
        for (code, cell) in rejected where cell.load > 0 { result[code.metricLabel] = cell.load }
        return result
    }

    var refusals: [String: Int] {
        var result: [String: Int] = [:]
        for (code, cell) in refused where cell.load > 0 { result[code.metricLabel] = cell.load }
        return result
    }

    var totalRejected: Int { rejected.values.reduce(0) { $0 + $1.load } }
}
