import FlowKitCluster
import Foundation
import Synchronization

/// What the dashboard's pages are told: the monitor's events as JSON lines, the same schema as
/// `flowkit monitor --json` (docs/DASHBOARD.md), and, for a page that just opened, where things
/// stand (the last status, the latest entries and alarms, the running bench's seconds).
///
/// A page shows the latest entries, not every one: under load the hub sends entries at most ten
/// times a second, the newest ``entriesPerSend`` of what was ordered meanwhile, so a page at
/// 40,000 entries/s costs what it costs at 500. Heartbeats (ten a second) go out at most four
/// times a second. A page that cannot keep up loses the oldest lines it has not been sent, never
/// the hub's state.
package final class DashboardHub: Sendable {
    private struct State {
        /// The latest status and heartbeat, encoded as JSON only when a page is sent them: the
        /// monitor hears ten heartbeats a second, and encoding each for no page cost an idle
        /// `flowkit cluster` a third of its CPU.
        var status: ClusterMonitor.Event?
        var heartbeat: ClusterMonitor.Event?
        /// The latest entries, and those not yet sent to the pages (the newest ``entriesPerSend``):
        /// encoded as JSON only when sent, so entries no page sees cost nothing but a copy.
        var entries: [Entry] = []
        var unsent: [Entry] = []
        var alarms: [String] = []
        /// The latest bench run's lines (``BenchLive``), so a page opened mid-run draws its charts.
        var bench: [String] = []
        var benchRun: String?
        var pages: [UInt64: AsyncStream<String>.Continuation] = [:]
        var nextPage: UInt64 = 1
        var lastHeartbeatSent = ContinuousClock.now - .seconds(1)
        var lastEntriesSent = ContinuousClock.now - .seconds(1)

        /// Sends lines to every page as one message (JSON lines, separated by newlines).
        mutating func send(_ lines: [String]) {
            guard !lines.isEmpty else { return }
            let message = lines.joined(separator: "\n")
            for page in pages.values { page.yield(message) }
        }

        /// Sends the unsent entries if the last send was long enough ago (or `now`).
        mutating func sendEntries(force: Bool = false) {
            guard !unsent.isEmpty, force || ContinuousClock.now - lastEntriesSent >= .milliseconds(100) else { return }
            lastEntriesSent = .now
            if !pages.isEmpty { send(MonitorView.json(for: .entries(unsent))) }
            unsent = []
        }
    }

    private let state = Mutex(State())
    /// How many of the latest entries a page gets when it opens.
    package let keptEntries: Int
    /// The most entries one send carries (the page shows 50).
    package let entriesPerSend = 50

    package init(keptEntries: Int = 500) {
        self.keptEntries = keptEntries
    }

    /// Takes in one monitor event and passes it on to every page.
    package func publish(_ event: ClusterMonitor.Event) {
        if case .entries(let entries) = event {
            state.withLock { state in
                state.entries.append(contentsOf: entries.suffix(keptEntries))
                if state.entries.count > keptEntries { state.entries.removeFirst(state.entries.count - keptEntries) }
                state.unsent.append(contentsOf: entries.suffix(entriesPerSend))
                if state.unsent.count > entriesPerSend { state.unsent.removeFirst(state.unsent.count - entriesPerSend) }
                state.sendEntries()
            }
            return
        }
        // Encoded for the pages open now (a page that opens later gets the latest from `snapshot`);
        // alarms are kept as lines, for every page to come.
        let isAlarm = if case .alarm = event { true } else { false }
        let lines = isAlarm || pages > 0 ? MonitorView.json(for: event) : []
        state.withLock { state in
            switch event {
            case .status:
                state.status = event
                state.sendEntries(force: true)
            case .entries:
                return
            case .alarm:
                state.alarms.append(contentsOf: lines)
                if state.alarms.count > 20 { state.alarms.removeFirst(state.alarms.count - 20) }
            case .heartbeat:
                state.heartbeat = event
                // The monitor's heartbeats (ten a second) carry the entries that waited out.
                state.sendEntries()
                guard ContinuousClock.now - state.lastHeartbeatSent >= .milliseconds(250) else { return }
                state.lastHeartbeatSent = .now
            case .fellBehind:
                break
            }
            // A page that opened since the check above is sent it too.
            state.send(lines.isEmpty && !state.pages.isEmpty ? MonitorView.json(for: event) : lines)
        }
    }

    /// Takes in one second of a running bench and passes it on to every page.
    package func publish(bench: BenchLive) {
        let line = jsonLine(bench)
        state.withLock { state in
            if state.benchRun != bench.run {
                state.benchRun = bench.run
                state.bench = []
            }
            state.bench.append(line)
            if state.bench.count > keptBenchSeconds { state.bench.removeFirst(state.bench.count - keptBenchSeconds) }
            state.send([line])
        }
    }

    /// How many seconds of the latest bench run a page gets when it opens.
    package let keptBenchSeconds = 600

    /// Where things stand, as the lines a page replays before the live ones.
    package var snapshot: [String] {
        state.withLock { Self.snapshot(of: $0) }
    }

    private static func snapshot(of state: State) -> [String] {
        [state.status, state.heartbeat].compactMap { $0.flatMap { MonitorView.json(for: $0).last } } + state.alarms + MonitorView.json(for: .entries(state.entries)) + state.bench
    }

    /// A page opens: the lines to replay, and every message from now on (one or more lines,
    /// separated by newlines) until it ``leave(_:)``s.
    package func join() -> (page: UInt64, snapshot: [String], lines: AsyncStream<String>) {
        let (lines, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(4_096))
        return state.withLock { state in
            let page = state.nextPage
            state.nextPage += 1
            state.pages[page] = continuation
            return (page, Self.snapshot(of: state), lines)
        }
    }

    package func leave(_ page: UInt64) {
        state.withLock { $0.pages.removeValue(forKey: page) }?.finish()
    }

    /// Pages open now.
    package var pages: Int { state.withLock { $0.pages.count } }
}
