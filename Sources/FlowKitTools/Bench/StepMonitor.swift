import FlowKitCommands
import Foundation
import Synchronization

/// Watches a step as it runs: a progress line on stderr every second, each process's CPU time at
/// the start and end of the measured window, node memory every second, and the log head.
final class StepMonitor: Sendable {
    /// What the monitor saw.
    struct Samples: Sendable {
        var atWindowStart: [String: ProcessStats] = [:]
        var atWindowEnd: [String: ProcessStats] = [:]
        var windowStartMicros: UInt64 = 0
        var windowEndMicros: UInt64 = 0
        var headAtWindowStart: UInt64 = 0
        var headAtWindowEnd: UInt64 = 0
        /// Each node's applied seq at the window's start and end.
        var appliedAtWindowStart: [UInt64] = []
        var appliedAtWindowEnd: [UInt64] = []
        /// Per process, resident bytes once a second.
        var rss: [String: [UInt64]] = [:]
        /// The largest `head − applied` over the nodes, once a second.
        var lag: [UInt64] = []
    }

    private let samples = Mutex(Samples())
    private let finished = Atomic<Bool>(false)

    /// Which step of which run this is, as a dashboard shows it.
    struct Identity: Sendable {
        var run: String
        var step: Int
    }

    /// Samples until ``finish()``; call from a task of its own. Each second goes to stderr when
    /// `live`, and to the dashboard when there is one.
    func run(
        plan: LoadPlan, processes: WatchedProcesses, head: HeadTracker, recorder: LatencyRecorder, sender: OpenLoopSender, live: Bool,
        dashboard: DashboardReporter?, identity: Identity
    ) async {
        var nextSecond = plan.startMicros + 1_000_000
        var tookStart = false
        var tookEnd = false
        var previousApplied = recorder.appliedSeqs
        while !finished.load(ordering: .relaxed) {
            try? await Task.sleep(for: .milliseconds(50))
            let now = BenchClock.wallMicros()
            if !tookStart, now >= plan.windowStart {
                tookStart = true
                let stats = processes.sample()
                samples.withLock {
                    $0.atWindowStart = stats
                    $0.windowStartMicros = now
                    $0.headAtWindowStart = head.head
                    $0.appliedAtWindowStart = recorder.appliedSeqs
                }
            }
            if !tookEnd, now >= plan.windowEnd {
                tookEnd = true
                let stats = processes.sample()
                samples.withLock {
                    $0.atWindowEnd = stats
                    $0.windowEndMicros = now
                    $0.headAtWindowEnd = head.head
                    $0.appliedAtWindowEnd = recorder.appliedSeqs
                }
            }
            guard now >= nextSecond else { continue }
            nextSecond += 1_000_000
            let resident = processes.residentBytes()
            let interval = recorder.interval()
            let currentHead = head.head
            let lag = interval.appliedSeqs.map { currentHead > $0 ? currentHead - $0 : 0 }.max() ?? 0
            samples.withLock { samples in
                for (name, bytes) in resident { samples.rss[name, default: []].append(bytes) }
                samples.lag.append(lag)
            }
            let appliedPerSecond = zip(interval.appliedSeqs, previousApplied).map { $0 > $1 ? Int($0 - $1) : 0 }.min() ?? 0
            previousApplied = interval.appliedSeqs
            // Sent first, then what was due by now: the sender never sends ahead of its plan.
            let sent = sender.sent
            let elapsed = Double(BenchClock.wallMicros() - plan.startMicros) / 1e6
            let offered = elapsed < 0 ? 0 : min(plan.count, Int(elapsed * plan.rate) + 1)  // event i is due at i / rate
            dashboard?.report(
                BenchLive(
                    run: identity.run, step: identity.step,
                    phase: now < plan.windowStart ? .warmUp : now < plan.windowEnd ? .measuring : .checking,
                    elapsed: (elapsed * 10).rounded() / 10, rate: plan.rate, offered: offered, sent: sent, acknowledged: recorder.acknowledged,
                    orderedPerSecond: interval.acknowledged, appliedPerSecond: appliedPerSecond, lag: lag,
                    ordered: interval.ordered.live, applied: interval.applied.live
                )
            )
            if live {
                printError(
                    "[\(BenchFormat.fixed(elapsed, 1))s] offered \(BenchFormat.count(offered))  sent \(BenchFormat.count(sent))"
                        + "  acked \(BenchFormat.count(recorder.answered))  ordered/s \(BenchFormat.count(interval.acknowledged))"
                        + "  applied/s \(BenchFormat.count(appliedPerSecond))  lag \(BenchFormat.count(Int(lag)))"
                        + "  p99 ordered \(BenchFormat.micros(interval.ordered.p99)) applied \(BenchFormat.micros(interval.applied.p99))"
                )
            }
        }
        // A step cut short (Ctrl-C, or an attach cluster that stopped) ends its window now.
        samples.withLock { samples in
            if samples.atWindowStart.isEmpty {
                samples.atWindowStart = processes.sample()
                samples.windowStartMicros = BenchClock.wallMicros()
                samples.headAtWindowStart = head.head
                samples.appliedAtWindowStart = recorder.appliedSeqs
            }
            if samples.atWindowEnd.isEmpty {
                samples.atWindowEnd = processes.sample()
                samples.windowEndMicros = BenchClock.wallMicros()
                samples.headAtWindowEnd = head.head
                samples.appliedAtWindowEnd = recorder.appliedSeqs
            }
        }
    }

    /// Stops sampling; ``run`` returns soon after.
    func finish() { finished.store(true, ordering: .relaxed) }

    var result: Samples { samples.withLock { $0 } }
}
